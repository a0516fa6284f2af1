"""Trials as the gate's unit: run-to-run noise that moves every request of a run together.

Synthetic runs get a per-trial speed factor (lognormal, 8%), as machine load gives real runs. Judged
request by request, such noise looks significant; judged trial by trial it does not, while a real
regression still fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.gate import GateConfig, evaluate, rules_from_texts, sample_from_records
from harness.judge.trials import compare_trials, use_trials
from tests.fixtures.gate_runs import synthetic_run

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

RULES = ("tpot.p50 <= +5%", "e2e.mean <= +5%", "output_tok_s >= -5%", "slo_attainment >= -5pp")
TRIAL_NOISE = 0.08


def trials_run(
    seed: int, trials: int, *, speed: float = 1.0, engine: str = "e", trial_noise: float = TRIAL_NOISE
) -> list[dict]:
    """`trials` trials, trial k replaying schedule k, each slowed or sped up as a whole by run noise."""
    noise = np.random.default_rng([seed, 99])
    records = []
    for k in range(trials):
        factor = float(noise.lognormal(0.0, trial_noise))
        for rec in synthetic_run(seed * 1000 + k, n=40, speed=speed * factor, schedule_seed=k, engine=engine):
            records.append({**rec, "trial": k})
    return records


def gate(base, cand, rules=RULES, **settings):
    config = GateConfig(rules=rules_from_texts(list(rules)), slo_ttft_ms=150, slo_tpot_ms=25, **settings)
    return evaluate(config, _sample(base), _sample(cand))


def _sample(run):
    """Records, or a sample made from them once (the loops below judge each pair more than once)."""
    return sample_from_records(run) if isinstance(run, list) else run


def test_auto_judges_trials_once_both_runs_hold_enough():
    verdict = gate(trials_run(1, 5), trials_run(2, 5))
    assert verdict.settings["unit"] == "trial"
    for r in verdict.results:
        assert r.test.startswith("paired t-test on 5 trials") and r.paired
        assert r.n_baseline == r.n_candidate == 5
    few = gate(trials_run(1, 2), trials_run(2, 2))
    assert few.settings["unit"] == "request" and few.results[0].test == "wilcoxon"
    # requests cannot show the run-to-run noise: the change is shown, and the gate cannot tell
    assert {r.status for r in few.results} == {"inconclusive"} and few.exit_code == 3
    assert few.results[0].needed == 3 and few.results[0].needed_unit == "trials" and "--repeat" in few.results[0].note
    forced = gate(trials_run(1, 2), trials_run(2, 2), unit="trial")
    assert forced.settings["unit"] == "trial" and "2 trials" in forced.results[0].test
    assert gate(trials_run(1, 5), trials_run(2, 5), unit="request").settings["unit"] == "request"


def test_run_noise_alone_fails_no_more_often_than_alpha_by_trials_but_often_by_requests():
    pairs = 100
    runs = [(_sample(trials_run(2 * i, 5)), _sample(trials_run(2 * i + 1, 5))) for i in range(pairs)]
    by_trial = sum(gate(a, b, rules=RULES[:1], n_boot=100).regressed for a, b in runs)
    by_request = sum(gate(a, b, rules=RULES[:1], n_boot=100, unit="request").regressed for a, b in runs)
    print(f"A/A false alarms in {pairs} pairs: {by_trial} judged by trials, {by_request} by requests")
    # alpha 0.05, and the rule needs the change past +5% as well: the binomial 99.9% bound of 100 draws at 5% is 13
    assert by_trial <= 13
    assert by_request > 2 * by_trial + 10  # the reason the unit exists


def test_a_real_regression_fails_by_trials():
    detected = sum(
        gate(trials_run(2 * i, 6), trials_run(2 * i + 1, 6, speed=1.25), rules=RULES[:1], n_boot=100).regressed
        for i in range(40)
    )
    assert detected >= 36
    verdict = gate(trials_run(1, 6), trials_run(2, 6, speed=1.25), rules=RULES[:1])
    (tpot,) = verdict.results
    assert tpot.change == pytest.approx(0.25, abs=0.12) and tpot.ci_low < tpot.change < tpot.ci_high


def test_unmatched_trials_use_welch():
    base = trials_run(1, 4)
    cand = [{**r, "trial": r["trial"] + 10} for r in trials_run(2, 5)]
    verdict = gate(base, cand, rules=RULES[:1])
    (tpot,) = verdict.results
    assert tpot.test.startswith("Welch t-test on 4 + 5 trials") and not tpot.paired


def test_compare_trials_edges():
    same = np.array([1.0, 1.1, 0.9])
    assert compare_trials(same, same, relative=True, paired=True, worse="greater", alpha=0.05, what="x").p_value == 1.0
    shifted = compare_trials(same, same * 1.2, relative=True, paired=True, worse="greater", alpha=0.05, what="x")
    assert shifted is not None and shifted.p_value == 0.0 and shifted.change == pytest.approx(0.2)
    lower_is_worse = compare_trials(same, same * 1.2, relative=True, paired=True, worse="less", alpha=0.05, what="x")
    assert lower_is_worse is not None and lower_is_worse.p_value == 1.0
    zeros = np.zeros(4)  # no errors on either side: nothing changed, no log ratio needed
    none_either = compare_trials(zeros, zeros, relative=True, paired=True, worse="greater", alpha=0.05, what="x")
    assert none_either is not None and none_either.change == 0.0 and none_either.p_value == 1.0
    from_zero = compare_trials(
        zeros, np.full(4, 0.1), relative=True, paired=True, worse="greater", alpha=0.05, what="x"
    )
    assert from_zero is not None and from_zero.change == float("inf") and from_zero.p_value == 0.0
    some = compare_trials(
        np.array([0.1, 0.0, 0.1, 0.2]),
        np.array([0.2, 0.1, 0.2, 0.3]),
        relative=True,
        paired=True,
        worse="greater",
        alpha=0.05,
        what="x",
    )
    assert some is not None and some.change == pytest.approx(1.0) and some.p_value == 0.0  # +0.1 on a mean of 0.1
    assert (
        compare_trials(
            np.array([1.0]), np.array([1.0]), relative=True, paired=True, worse="greater", alpha=0.05, what="x"
        )
        is None
    )  # one trial: no spread to test against
    delta = compare_trials(
        np.array([0.0, 0.1, 0.0]),
        np.array([0.2, 0.2, 0.3]),
        relative=False,
        paired=False,
        worse="greater",
        alpha=0.05,
        what="x",
    )
    assert delta is not None and delta.change == pytest.approx(0.2) and delta.p_value < 0.05


def test_use_trials():
    assert use_trials("auto", [0, 1, 2], [0, 1, 2], 3)
    assert not use_trials("auto", [0, 1], [0, 1, 2], 3)
    assert use_trials("trial", [0, 1], [0, 1], 3)
    assert not use_trials("trial", [0], [0, 1], 3)
    assert not use_trials("request", [0, 1, 2], [0, 1, 2], 3)


def test_a_relative_rule_on_a_zero_share_is_judged_not_no_data():
    verdict = gate(trials_run(1, 5), trials_run(2, 5), rules=["error_rate <= +10%", "goodput >= -50%"])
    assert [r.status for r in verdict.results] == ["pass", "pass"] and verdict.passed
    assert verdict.results[0].change == 0.0


def test_trial_sd_is_the_spread_of_one_trials_change():
    rng = np.random.default_rng(5)
    a = np.exp(rng.normal(0.0, 0.05, 16))
    b = a * np.exp(rng.normal(0.1, 0.08, 16))  # paired: each trial's ratio has log-sd 0.08
    paired = compare_trials(a, b, relative=True, paired=True, worse="greater", alpha=0.05, what="x")
    assert paired is not None and paired.trial_sd == pytest.approx(np.std(np.log(b / a), ddof=1))
    welch = compare_trials(a, b, relative=True, paired=False, worse="greater", alpha=0.05, what="x")
    expected = np.sqrt(np.var(np.log(a), ddof=1) + np.var(np.log(b), ddof=1))
    assert welch is not None and welch.trial_sd == pytest.approx(expected)
