"""Gate decisions on synthetic records: identical runs pass, a clear regression fails, a regression below
its threshold passes, and noise alone fails no more often than alpha allows."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.gate import GateConfig, RunSample, evaluate, rules_from_texts, sample_from_records
from tests.fixtures.gate_runs import synthetic_run

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

RULES = (
    "ttft.p99 <= +10%",
    "tpot.p50 <= +5%",
    "e2e.mean <= +5%",
    "output_tok_s >= -5%",
    "goodput >= -5%",
    "error_rate <= +1pp",
)


def gate(base, cand, rules=RULES, **settings):
    settings.setdefault("unit", "request")  # synthetic requests are drawn independently: no run-to-run noise
    config = GateConfig(rules=rules_from_texts(list(rules)), slo_ttft_ms=150, slo_tpot_ms=25, **settings)
    return evaluate(config, _sample(base), _sample(cand))


def _sample(run):
    """Records, or a sample made from them once (the loops below judge each pair more than once)."""
    return sample_from_records(run) if isinstance(run, list) else run


def statuses(verdict):
    return {r.rule: r.status for r in verdict.results}


def test_identical_runs_pass():
    run = synthetic_run(1, n=200)  # p99 is resolved from 200 values a side (harness.judge.verdict)
    verdict = gate(run, run)
    assert verdict.passed and verdict.exit_code == 0
    assert verdict.pairing["paired"] and verdict.pairing["shared_requests"] == 200
    assert all(r.change == 0 and not r.significant for r in verdict.results)


def test_a_clear_regression_fails():
    verdict = gate(synthetic_run(1, n=400), synthetic_run(2, n=400, speed=1.3))
    s = statuses(verdict)
    assert not verdict.passed and verdict.exit_code == 1
    assert s["ttft.p99 <= +10%"] == s["tpot.p50 <= +5%"] == s["e2e.mean <= +5%"] == "fail"
    tpot = verdict.results[1]
    assert tpot.change == pytest.approx(0.3, abs=0.05) and tpot.ci_low > 0.05 and tpot.p_value < 1e-6
    assert tpot.test == "wilcoxon" and tpot.paired


def test_a_regression_below_its_threshold_passes_although_significant():
    verdict = gate(synthetic_run(1, n=400), synthetic_run(2, n=400, speed=1.02), rules=["tpot.p50 <= +5%"])
    (tpot,) = verdict.results
    assert tpot.significant and not tpot.past_threshold  # real, detectable, and allowed
    assert tpot.status == "pass" and verdict.passed


def test_a_p99_the_sample_cannot_resolve_cannot_tell_and_fails_unless_allowed():
    # p99 of 60 requests is their maximum: its interval would look tight, so the rule says what it lacks
    verdict = gate(synthetic_run(1, n=60), synthetic_run(2, n=60, speed=1.3), rules=["ttft.p99 <= +5%"])
    (ttft,) = verdict.results
    assert ttft.test.startswith("quantile") and ttft.past_threshold
    assert ttft.status == "inconclusive" and ttft.needed == 200 and ttft.needed_unit == "requests"
    assert "extreme" in ttft.note and not verdict.passed and verdict.exit_code == 3
    assert verdict.to_json()["verdict"] == "cannot_tell"
    allowed = gate(
        synthetic_run(1, n=60), synthetic_run(2, n=60, speed=1.3), rules=["ttft.p99 <= +5%"], allow_inconclusive=True
    )
    assert allowed.passed and allowed.exit_code == 0 and allowed.to_json()["allow_inconclusive"] is True


def test_an_interval_across_the_threshold_cannot_tell_and_says_how_many_requests_would():
    cand = synthetic_run(2, n=40, speed=1.05, schedule_seed=5)  # unpaired: each request's own noise stays in
    verdict = gate(synthetic_run(1, n=40), cand, rules=["tpot.p50 <= +5%"])
    (tpot,) = verdict.results
    assert tpot.ci_low < 0.05 < tpot.ci_high and tpot.status == "inconclusive" and verdict.exit_code == 3
    assert tpot.needed_unit == "requests" and tpot.needed > 40


def test_a_saturated_slower_engine_fails_throughput():
    # arrivals outrun two slots on both sides: each finishes what its speed allows, the candidate less
    base = synthetic_run(1, n=200, rate=12.0, servers=2)
    cand = synthetic_run(2, n=200, rate=12.0, servers=2, speed=1.4)
    (tok_s,) = gate(base, cand, rules=["output_tok_s >= -5%"]).results
    assert tok_s.status == "fail" and tok_s.change == pytest.approx(1 / 1.4 - 1, abs=0.05)


def test_a_slower_engine_that_misses_its_slo_fails_goodput():
    # the baseline keeps up within the SLO (TPOT 20 ms < 25 ms); the candidate's 28 ms TPOT misses it
    base = synthetic_run(1, n=200, rate=2.5, servers=2)
    cand = synthetic_run(2, n=200, rate=2.5, servers=2, speed=1.4)
    (good,) = gate(base, cand, rules=["goodput >= -5%"]).results
    assert good.status == "fail" and good.test == "mcnemar on SLO outcomes"


def test_errors_fail_the_error_rule():
    s = statuses(gate(synthetic_run(1), synthetic_run(2, failed=12)))
    assert s["error_rate <= +1pp"] == "fail"


@functools.cache
def _aa_sample(seed: int, schedule_seed: int) -> RunSample:
    """One A/A side of 60 requests, made into a sample once per module (the gate only reads a sample)."""
    return sample_from_records(synthetic_run(seed, n=60, schedule_seed=schedule_seed))


@pytest.mark.parametrize(("paired", "pairs"), [(True, 200), (False, 100)])
def test_noise_alone_fails_no_more_often_than_alpha(paired, pairs):
    """Seeded A/A pairs drawn from one distribution: per rule and per verdict, at most alpha fail."""
    alpha = 0.05
    failures = np.zeros(len(RULES), dtype=int)
    verdicts = 0
    for i in range(pairs):
        base = _aa_sample(2 * i, 0)  # the paired and unpaired loops share their baselines
        cand = _aa_sample(2 * i + 1, 0 if paired else 1)
        verdict = gate(base, cand, alpha=alpha, n_boot=200, seed=i)
        assert verdict.pairing["paired"] == paired
        failures += [r.status == "fail" for r in verdict.results]
        verdicts += verdict.regressed  # noise may leave a rule undecided; it must not fail one
    assert failures.max() <= alpha * pairs, dict(zip(RULES, failures, strict=True))
    assert verdicts <= alpha * pairs


def test_unpaired_comparison_uses_mann_whitney_and_the_bootstrap():
    verdict = gate(synthetic_run(1), synthetic_run(2, schedule_seed=5, speed=1.3))
    assert not verdict.pairing["paired"] and "different times" in verdict.pairing["reason"]
    tests = {r.rule: r.test for r in verdict.results}
    assert tests["tpot.p50 <= +5%"] == "mann-whitney" and tests["ttft.p99 <= +10%"].startswith("quantile")
    assert statuses(verdict)["tpot.p50 <= +5%"] == "fail"


def test_absolute_limits_need_no_baseline():
    config = GateConfig(rules=rules_from_texts(["ttft.p50 <= 1s", "ttft.p99 <= 10ms", "error_rate <= 1%"]))
    # 300 error-free requests bound the error rate by 0.99% (exact, one-sided 95%); 120 only by 2.5%
    verdict = evaluate(config, None, sample_from_records(synthetic_run(1, n=300)))
    s = statuses(verdict)
    assert s == {"ttft.p50 <= 1s": "pass", "ttft.p99 <= 10ms": "fail", "error_rate <= 1%": "pass"}
    few = evaluate(config, None, sample_from_records(synthetic_run(1)))
    assert statuses(few)["error_rate <= 1%"] == "inconclusive" and few.results[2].ci_high > 0.01
    with pytest.raises(HarnessInputError, match="baseline"):
        evaluate(GateConfig(rules=rules_from_texts(["ttft.p99 <= +10%"])), None, sample_from_records(synthetic_run(1)))


def test_a_rule_without_data_fails_the_gate():
    one_token = [dict(r, token_times=r["token_times"][:1], output_tokens=1) for r in synthetic_run(1)]
    verdict = gate(synthetic_run(1), one_token, rules=["tpot.p50 <= +5%"])
    assert verdict.results[0].status == "no_data" and not verdict.passed


def test_the_verdict_is_reproducible_and_strict_json():
    import json

    a = gate(synthetic_run(1), synthetic_run(2, speed=1.1)).to_json()
    b = gate(synthetic_run(1), synthetic_run(2, speed=1.1)).to_json()
    assert a == b
    json.dumps(a, allow_nan=False)
    assert a["verdict"] == "fail" and a["exit_code"] == 1 and len(a["rules"]) == len(RULES)
