"""The issue's repro on synthetic runs (cheap): a +140% candidate fails, one trial per side cannot tell and
says how many trials would, an A/A pair with 17 trials passes; `--allow-inconclusive` is recorded."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from tests.gate.test_gate_cli import write_run
from tests.gate.test_gate_trials import trials_run

RULES = ["--rule", "tpot.p50 <= +5%", "--rule", "ttft.p99 <= +10%"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("outcomes")
    made = {
        "base3": trials_run(1, 3),
        "slow3": trials_run(2, 3, speed=2.4),  # TPOT 3.6 -> 11 ms in the issue: +140%
        # a quieter machine than the default 8% a trial: at 8% (11% on one trial's change) a +5% rule is
        # decided by 17 trials only about half the time, and the verdict says how many more it needs
        "base17": trials_run(3, 17, trial_noise=0.02),
        "same17": trials_run(4, 17, trial_noise=0.02),
    }
    made["base1"] = [r for r in made["base3"] if r["trial"] == 0]
    made["slow1"] = [r for r in made["slow3"] if r["trial"] == 0]
    return {name: write_run(root / name, records) for name, records in made.items()}


def gate(runs, base, cand, *extra):
    return main(["gate", "--baseline", str(runs[base]), "--candidate", str(runs[cand]), *RULES, *extra])


def test_a_140_percent_slower_candidate_fails_with_three_trials(runs, capsys):
    assert gate(runs, "base3", "slow3", "--quiet") == 1
    out = capsys.readouterr().out
    assert out.startswith("gate: REGRESSION:") and "tpot.p50 <= +5% (fail: +1" in out


def test_a_percentile_no_trial_resolves_is_named_as_the_trials_extreme(runs, capsys, tmp_path):
    """40 requests a trial: each trial's p99 is about its maximum; the trials' noise decides the rule, and the
    verdict says it judged that extreme, not a resolved p99 (the judge's bound, harness.judge.verdict)."""
    path = tmp_path / "v.json"
    assert gate(runs, "base3", "slow3", "--json", str(path)) == 1
    notes = {r["rule"]: r["note"] for r in json.loads(path.read_text())["rules"]}
    caveat = "each trial's p99 is of as few as 40 values, about their extreme: the trials judge that extreme"
    assert caveat in notes["ttft.p99 <= +10%"] and "needs 200 values per trial" in notes["ttft.p99 <= +10%"]
    assert not notes["tpot.p50 <= +5%"]  # a median of 40 is resolved
    assert f"- `ttft.p99 <= +10%`: {caveat}" in capsys.readouterr().out  # the Markdown summary shows it


def test_one_trial_per_side_cannot_tell_and_names_the_trials_it_needs(runs, capsys, tmp_path):
    verdict_path = tmp_path / "v.json"
    assert gate(runs, "base1", "slow1", "--json", str(verdict_path)) == 3
    out = capsys.readouterr().out
    assert "⚠️ cannot tell" in out and "gate: CANNOT TELL:" in out and "at least 3 trials per side" in out
    verdict = json.loads(verdict_path.read_text())
    assert verdict["verdict"] == "cannot_tell" and verdict["exit_code"] == 3
    assert {r["status"] for r in verdict["rules"]} == {"inconclusive"}
    assert {(r["needed"], r["needed_unit"]) for r in verdict["rules"]} == {(3, "trials")}
    assert verdict["rules"][0]["change"] > 1.0  # the change is still shown (+140% and one trial's noise)
    # a team may choose to pass what the data cannot decide; the verdict says it did
    assert gate(runs, "base1", "slow1", "--allow-inconclusive", "--json", str(verdict_path)) == 0
    allowed = json.loads(verdict_path.read_text())
    assert allowed["verdict"] == "pass" and allowed["allow_inconclusive"] is True
    assert "2 cannot tell, allowed" in capsys.readouterr().out


def test_an_a_a_pair_with_17_trials_passes(runs, capsys):
    argv = ["gate", "--baseline", str(runs["base17"]), "--candidate", str(runs["same17"]), "--quiet"]
    assert main([*argv, "--rule", "tpot.p50 <= +5%"]) == 0
    assert capsys.readouterr().out.startswith("gate: pass (1 rules)")


def test_a_straddling_trial_interval_says_how_many_trials_would_decide(runs, tmp_path):
    path = tmp_path / "v.json"
    code = main(
        [
            "gate",
            "--baseline",
            str(runs["base3"]),
            "--candidate",
            str(runs["base17"]),
            "--rule",
            "tpot.p50 <= +5%",
            "--unit",
            "trial",
            "--json",
            str(path),
        ]
    )
    (rule,) = json.loads(path.read_text())["rules"]
    # 3 noisy trials against 17 quiet ones (Welch): the interval straddles +5% widely
    assert rule["ci_low"] < 0.05 < rule["ci_high"] and rule["status"] == "inconclusive" and code == 3
    assert rule["needed_unit"] == "trials" and rule["needed"] > 17
    assert f"about {rule['needed']} trials per side would decide it" in rule["note"]
    assert rule["quantity"].startswith("tpot.p50 of each trial, candidate / baseline - 1 (mean of per-trial log")


@pytest.mark.parametrize(
    ("rule", "needle"),
    [
        ("tpot.p50 <= nan%", "field threshold: threshold 'nan%'"),
        ("tpot.p50 <= +nan%", "field threshold: threshold '+nan%'"),
        ("tpot.p50 <= -5%", "needs the sign +"),  # a negative tolerance on an upper bound
        ("output_tok_s >= +5%", "needs the sign -"),
        ("queue_delay.p50 <= +5%", "records no t_admitted (an admission time), so it has no queue_delay"),
        ("tpot.p50 <= +inf%", "field threshold: threshold '+inf%'"),  # the #31 audit's own
        ("tpot.p50 <= +five%", "field threshold: threshold '+five%'"),
        ("error_rate <= 150%", "a limit on a share lies in 0..100%"),
    ],
)
def test_a_rule_the_runs_cannot_carry_is_one_line_and_exit_2(runs, tmp_path, capsys, rule, needle):
    lacking = [{**r, "t_admitted": None} for r in trials_run(1, 3)]  # as an HTTP run: no admission seen
    run = write_run(tmp_path / "http", lacking)
    assert main(["gate", "--baseline", str(run), "--candidate", str(runs["slow3"]), "--rule", rule]) == 2
    err = capsys.readouterr().err
    assert err.startswith("batchmark: error:") and needle in err and err.count("\n") == 1, err


def test_a_limit_on_a_percentile_sixteen_values_cannot_bound_says_how_many_would():
    from harness.gate import GateConfig, evaluate, rules_from_texts, sample_from_records
    from tests.fixtures.gate_runs import synthetic_run

    config = GateConfig(rules=rules_from_texts(["e2e.p90 <= 5s", "e2e.p50 <= 5s"]))
    far, near = evaluate(config, None, sample_from_records(synthetic_run(1, n=16))).results
    # every e2e is about a second, yet 16 values cannot put an upper bound on p90 (0.9^16 = 19% > 5%)
    assert (
        far.status == "inconclusive"
        and far.ci_high == float("inf")
        and (far.needed, far.needed_unit) == (29, "requests")
    )
    assert near.status == "pass" and near.ci_high < 5
