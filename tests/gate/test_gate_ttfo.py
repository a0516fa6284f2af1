"""A gate rule on TTFO sees what TTFT cannot: a candidate that thinks before it answers."""

from __future__ import annotations

from harness.gate import GateConfig, evaluate, rules_from_texts, sample_from_records
from tests.fixtures.gate_runs import synthetic_run


def test_ttfo_fails_a_candidate_that_reasons_first_while_ttft_passes() -> None:
    base = synthetic_run(1)
    # the same token times, but the first three tokens are reasoning: the answer starts three gaps later
    cand = [{**r, "token_channels": "rrr" + "c" * (len(r["token_times"]) - 3)} for r in base]
    rules = rules_from_texts(["ttft.p50 <= +10%", "ttfo.p50 <= +10%"])
    # one synthetic trial per side whose requests are drawn independently: judged by request
    config = GateConfig(rules=rules, slo_ttft_ms=150, slo_tpot_ms=25, unit="request")
    verdict = evaluate(config, sample_from_records(base), sample_from_records(cand))
    assert {r.rule: r.status for r in verdict.results} == {"ttft.p50 <= +10%": "pass", "ttfo.p50 <= +10%": "fail"}
