"""The registered sensitivity rule (`[judge] tipping_elasticity = X`, `sensitivity = F`): a latency whose twins'
elasticity to the step price exceeds X cannot tell in both verdicts, with its reason; the rest is judged as before.
Built from two of the tenth suite's committed pairs: hol-blocking-static (on a tipping point: TTFT p50's elasticity
17.6) and hol-blocking-continuous (every elasticity near 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.rule import verdict_fields
from harness.fidelity_suite.spec import Suite, Targets, Tipping, load_suite
from harness.fidelity_suite.table import format_table, pair_entry, suite_table
from harness.judge.fidelity import fidelity_outcome, tipping_reason
from tests.fidelity_suite.refusal import assert_refused
from tests.fidelity_suite.same_protocol import suites_before

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V10 = FIXTURES / "fidelity_suite_v10"
PAIRS = ("hol-blocking-static", "hol-blocking-continuous")
RULE = "tipping_elasticity = 3.0\nsensitivity = 0.1\n"
LATENCIES = ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99")


def _suite_file(tmp_path: Path, judge: str, pairs: tuple[str, ...] = PAIRS, name: str = "suite.toml") -> Path:
    """v10's suite with only `pairs`, its `[judge]` table's lines after `at_trial_speed = true` replaced by `judge`."""
    head, *blocks = (V10 / "suite.toml").read_text().split("[[pairs]]\n")
    kept = [b for b in blocks if any(f'name = "{p}"\n' in b for p in pairs)]
    assert len(kept) == len(pairs) and head.count("\n[judge]\nat_trial_speed = true\n") == 1
    path = tmp_path / name
    head = head.replace("\n[judge]\nat_trial_speed = true\n", f"\n[judge]\nat_trial_speed = true\n{judge}")
    path.write_text(head + "".join(f"[[pairs]]\n{b}" for b in kept))
    return path


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """The two pairs' table without the rule and with it (one seed: the rule, not the seeds, is under test)."""
    tmp = tmp_path_factory.mktemp("tipping")
    plain = suite_table(load_suite(_suite_file(tmp, "", name="plain.toml")), V10 / "runs", simulate_twin, seeds=1)
    ruled = suite_table(load_suite(_suite_file(tmp, RULE, name="ruled.toml")), V10 / "runs", simulate_twin, seeds=1)
    return plain, ruled


def _rows(entry: dict, at_speed: bool) -> dict[str, dict]:
    return {r["metric"]: r for r in (entry["at_trial_speed"] if at_speed else entry)["rows"]}


@pytest.mark.parametrize("at_speed", [False, True], ids=["plain", "at-trial-speed"])
def test_a_latency_over_the_threshold_cannot_tell_with_its_reason(both: tuple[dict, dict], at_speed: bool) -> None:
    plain, ruled = both
    entry = ruled["pairs"][0]
    assert entry["pair"] == "hol-blocking-static"
    elasticity = {m["metric"]: m["elasticity"] for m in entry["sensitivity"]["metrics"]}
    over = [m for m in LATENCIES if abs(elasticity[m]) > 3.0]
    assert "TTFT p50" in over and elasticity["TTFT p50"] > 10  # v10's log: 17.6 at five seeds
    before, after = _rows(plain["pairs"][0], at_speed), _rows(entry, at_speed)
    for metric in over:
        assert after[metric]["verdict"] == "cannot_tell", metric
        assert after[metric]["why"] == f"on a tipping point: elasticity {elasticity[metric]:.1f}", metric
        assert after[metric]["error"] == before[metric]["error"], metric  # judged differently, measured the same
    # not vacuous: in each verdict the rule turned a metric that held or failed into cannot tell
    assert any(before[m]["verdict"] != "cannot_tell" for m in over)


@pytest.mark.parametrize("at_speed", [False, True], ids=["plain", "at-trial-speed"])
def test_metrics_under_the_threshold_stay_as_they_were(both: tuple[dict, dict], at_speed: bool) -> None:
    plain, ruled = both
    for before_entry, after_entry in zip(plain["pairs"], ruled["pairs"], strict=True):
        elasticity = {m["metric"]: m["elasticity"] for m in after_entry["sensitivity"]["metrics"]}
        before, after = _rows(before_entry, at_speed), _rows(after_entry, at_speed)
        for metric, row in after.items():
            if metric in elasticity and abs(elasticity[metric]) > 3.0:
                continue
            assert row == before[metric], (after_entry["pair"], metric)  # no reason added, the same verdict
    # hol-blocking-continuous: nothing near a tipping point, so its whole judgement is the one without the rule
    calm_before, calm_after = plain["pairs"][1], ruled["pairs"][1]
    assert calm_after["rows"] == calm_before["rows"] and calm_after["verdict"] == calm_before["verdict"]
    assert calm_after["at_trial_speed"] == calm_before["at_trial_speed"]


def test_the_pair_s_verdict_follows_from_its_metrics_in_both_verdicts(both: tuple[dict, dict]) -> None:
    _, ruled = both
    for entry in ruled["pairs"]:
        for block in (entry, entry["at_trial_speed"]):
            seen = {r["verdict"] for r in block["rows"]}
            want = "fails" if "fails" in seen else "holds" if seen == {"holds"} else "cannot_tell"
            assert block["verdict"] == want, entry["pair"]
    # hol-blocking-static's throughput is no latency: the rule leaves it, and it still fails the plain verdict
    static = _rows(ruled["pairs"][0], False)
    assert "why" not in static["output tok/s"] and ruled["pairs"][0]["verdict"] == "fails"


def test_the_table_says_the_rule_and_each_reason(both: tuple[dict, dict]) -> None:
    plain, ruled = both
    assert ruled["tipping_rule"] == {"elasticity": 3.0, "sensitivity": 0.1} and "tipping_rule" not in plain
    text = format_table(ruled)
    assert "  tipping rule: TTFT p50 cannot tell, on a tipping point: elasticity " in text
    assert "tipping rule (registered: [judge] tipping_elasticity = 3, sensitivity = 0.1)" in text
    assert "reported, never judged" not in text
    assert "tipping rule" not in format_table(plain) and "sensitivity x(1+-" not in format_table(plain)


def test_the_judge_states_the_rule_once() -> None:
    targets = Targets(0.10, 0.20, 6)
    rule = Tipping(3.0, 0.1)
    assert fidelity_outcome(0.0, 0.0, 0.1, within_spread=False, elasticity=3.01, tipping=3.0) == "cannot_tell"
    assert fidelity_outcome(0.5, 0.0, 0.1, within_spread=False, elasticity=-3.5, tipping=3.0) == "cannot_tell"
    assert fidelity_outcome(0.0, 0.0, 0.1, within_spread=False, elasticity=3.0, tipping=3.0) == "holds"  # exceeds
    assert fidelity_outcome(0.5, 0.0, 0.1, within_spread=False, elasticity=None, tipping=3.0, latency=False) == "fails"
    # a latency the rule cannot clear (its elasticity not measured) is never judged, in either direction
    assert fidelity_outcome(0.5, 0.0, 0.1, within_spread=False, elasticity=None, tipping=3.0) == "cannot_tell"
    assert fidelity_outcome(0.0, 0.0, 0.1, within_spread=False, elasticity=None, tipping=3.0) == "cannot_tell"
    assert fidelity_outcome(0.0, 0.0, 0.1, within_spread=False, elasticity=None, tipping=None) == "holds"
    assert verdict_fields("TTFT p50", 0.0, 0.0, targets, rule, None) == {
        "verdict": "cannot_tell",
        "why": "tipping rule: elasticity not measured",
    }
    assert verdict_fields("output tok/s", 0.0, 0.0, targets, rule, None) == {"verdict": "holds"}
    assert fidelity_outcome(0.5, 0.0, 0.1, within_spread=False, elasticity=17.6, tipping=None) == "fails"
    assert verdict_fields("TTFT p99", 0.05, 0.0, targets, rule, 4.0) == {
        "verdict": "cannot_tell",
        "why": "on a tipping point: elasticity 4.0",
    }
    assert verdict_fields("TTFT p99", 0.05, 0.0, targets, None, 4.0) == {"verdict": "holds"}
    assert tipping_reason(17.61, 3.0) == "on a tipping point: elasticity 17.6"
    assert tipping_reason(2.0, 3.0) is None and tipping_reason(17.6, None) is None


@pytest.mark.parametrize(
    ("judge", "says"),
    [
        ('tipping_elasticity = "3"\nsensitivity = 0.1\n', "judge: field 'tipping_elasticity': not a number ('3')"),
        ("tipping_elasticity = true\nsensitivity = 0.1\n", "judge: field 'tipping_elasticity': not a number (True)"),
        ("tipping_elasticity = 0.5\nsensitivity = 0.1\n", "judge: field 'tipping_elasticity': 0.5 is outside [1, 100]"),
        ("tipping_elasticity = 101\nsensitivity = 0.1\n", "judge: field 'tipping_elasticity': 101 is outside [1, 100]"),
        ("tipping_elasticity = nan\nsensitivity = 0.1\n", "judge: field 'tipping_elasticity': nan is outside"),
        ("tipping_elasticity = 3\nsensitivity = 0\n", "judge: field 'sensitivity': 0 is outside (0, 0.5]"),
        ("tipping_elasticity = 3\nsensitivity = 0.6\n", "judge: field 'sensitivity': 0.6 is outside (0, 0.5]"),
        ("tipping_elasticity = 3\nsensitivity = [0.1]\n", "judge: field 'sensitivity': not a number ([0.1])"),
        ("tipping_elasticity = 3\n", "judge: field 'sensitivity': missing"),
        ("sensitivity = 0.1\n", "judge: field 'tipping_elasticity': missing"),
        ("tipping_elasticty = 3\nsensitivity = 0.1\n", "judge: unknown field 'tipping_elasticty'"),
    ],
)
def test_a_bad_tipping_rule_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str, says: str
) -> None:
    assert_refused(capsys, _suite_file(tmp_path, judge), says)


def test_another_sensitivity_than_the_registered_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _suite_file(tmp_path, RULE)
    assert load_suite(path).tipping == Tipping(3.0, 0.1)
    assert_refused(capsys, path, "registers its tipping rule at sensitivity = 0.1; drop", "--sensitivity", "0.2")


def test_no_earlier_suite_registers_the_rule_and_its_pairs_replay_as_recorded() -> None:
    earlier = suites_before(11)  # every suite registered before the rule existed
    assert len(earlier) == 10 and all(s.tipping is None for s in earlier)
    # without the key a pair's entry is byte for byte the recorded one (the quickest pair of the tenth suite)
    suite: Suite = load_suite(V10 / "suite.toml")
    pair = next(p for p in suite.pairs if p.name == "chat-small-static-held")
    expected = json.loads((V10 / "expected.json").read_text())
    want = next(p for p in expected["pairs"] if p["pair"] == pair.name)
    got = pair_entry(suite, pair, V10 / "runs", simulate_twin)
    assert json.dumps(got, indent=2) == json.dumps(want, indent=2)
