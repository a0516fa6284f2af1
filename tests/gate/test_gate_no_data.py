"""The gate cannot pass by accident: a rule whose metric is undefined or degenerate on either side is
`no_data`, with the reason, and fails the gate with its own exit code (3) unless a regression (1) also
failed it."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.gate import GateConfig, evaluate, rules_from_texts, sample_from_records
from harness.jsonl import JsonlWriter
from tests.fixtures.gate_runs import synthetic_run

# The rules of the CI example before it was fixed, which passed a candidate 3.6x slower on a burst.
OLD_EXAMPLE = ["tpot.p50 <= +5%", "ttft.p90 <= +10%", "output_tok_s >= -5%", "error_rate <= 1%"]


def gate(base, cand, rules, **settings):
    settings.setdefault("unit", "request")  # synthetic requests are drawn independently: no run-to-run noise
    config = GateConfig(rules=rules_from_texts(list(rules)), **settings)
    return evaluate(config, sample_from_records(base), sample_from_records(cand))


def by_rule(verdict):
    return {r.rule: r for r in verdict.results}


def burst(seed: int, speed: float = 1.0) -> list[dict]:
    # 64 requests due within 64 ms ("--rate 1000") queueing for 4 slots: a burst.
    return synthetic_run(seed, n=64, rate=1000.0, servers=4, speed=speed)


def test_the_gate_on_two_burst_runs_one_three_times_slower_fails():
    verdict = gate(burst(1), burst(2, speed=3.0), OLD_EXAMPLE)
    rules = by_rule(verdict)
    assert not verdict.passed and verdict.exit_code == 1
    assert rules["tpot.p50 <= +5%"].status == "fail" and rules["ttft.p90 <= +10%"].status == "fail"
    throughput = rules["output_tok_s >= -5%"]
    assert throughput.status == "no_data" and throughput.change is None
    assert "no token was produced inside the 0.0614 s steady window" in throughput.note


def test_a_degenerate_window_alone_is_no_data_never_a_pass():
    verdict = gate(burst(1), burst(2, speed=3.0), ["output_tok_s >= -5%", "goodput >= -5%", "request_rate >= -5%"])
    assert {r.status for r in verdict.results} == {"no_data"} and not verdict.passed
    assert verdict.exit_code == 3 and verdict.to_json()["verdict"] == "no_data"
    assert all(r.note.endswith("a rate over it would measure a transient") for r in verdict.results)
    assert "no token was produced" in verdict.results[0].note and "no request finished" in verdict.results[1].note


def test_an_exact_burst_names_the_burst():
    exact = [dict(r, t_scheduled=0.0, t_sent=0.0) for r in burst(1)]
    verdict = gate(exact, exact, ["output_tok_s >= -5%"])
    assert verdict.results[0].status == "no_data" and "a burst" in verdict.results[0].note


def test_zero_on_both_sides_of_a_more_is_better_metric_is_no_data_but_zero_errors_pass():
    base, cand = synthetic_run(1), synthetic_run(2)
    verdict = gate(base, cand, ["slo_attainment >= -5%", "goodput >= -5%", "error_rate <= +1pp"], slo_ttft_ms=0.001)
    rules = by_rule(verdict)
    attainment = rules["slo_attainment >= -5%"]
    assert attainment.status == "no_data" and "zero on both sides" in attainment.note
    assert rules["goodput >= -5%"].status == "no_data"
    assert rules["error_rate <= +1pp"].status == "pass"  # no errors on either side is the good case
    assert verdict.exit_code == 3


def test_fewer_requests_than_the_rule_needs_says_how_many():
    verdict = gate(synthetic_run(1, n=8), synthetic_run(2, n=8), ["tpot.p50 <= +5%", "request_rate >= -5%"])
    notes = {r.rule: r.note for r in verdict.results}
    assert all(r.status == "no_data" for r in verdict.results)
    assert notes["tpot.p50 <= +5%"] == (
        "too few tpot values: 8 on the baseline side and 8 on the candidate side; the rule needs min_samples = 10"
    )
    assert notes["request_rate >= -5%"].startswith("too few requests finished in the steady window: ")


def _write(path, records):
    path.mkdir()
    with JsonlWriter(path / "records.jsonl") as writer:
        for record in records:
            writer.write(record)
    (path / "manifest.json").write_text(json.dumps({"workload": {"fingerprint": "f" * 64}}))
    return path


@pytest.mark.parametrize(
    ("rules", "code", "word"), [(["output_tok_s >= -5%"], 3, "NO DATA"), (OLD_EXAMPLE, 1, "REGRESSION")]
)
def test_the_command_exits_3_for_no_data_and_says_why(tmp_path, capsys, rules, code, word):
    base, cand = _write(tmp_path / "base", burst(1)), _write(tmp_path / "cand", burst(2, speed=3.0))
    argv = ["gate", "--baseline", str(base), "--candidate", str(cand), "--unit", "request"]
    for rule in rules:
        argv += ["--rule", rule]
    assert main(argv) == code
    out = capsys.readouterr().out
    assert f"gate: {word}:" in out
    assert "- `output_tok_s >= -5%`: **no data**: candidate: no token was produced inside the 0.0614 s" in out


def test_a_latency_rule_on_a_run_that_cut_requests_off_is_no_data_never_a_pass():
    # The candidate's stop rule aborted its 20 slowest requests before their first token: judged on the
    # requests it did serve, its TTFT p90 would look no worse than the baseline's.
    base = synthetic_run(1, n=200)
    cand = synthetic_run(2, n=200)
    slowest = sorted(cand, key=lambda r: r["t_first_token"] - r["t_scheduled"])[-20:]
    for r in slowest:
        r.update(t_first_token=None, token_times=[], output_tokens=0, finish_reason="abort", error_type="stopped")
    verdict = gate(base, cand, ["ttft.p90 <= +10%", "ttft.p50 <= +10%", "error_rate <= 50%"])
    rules = by_rule(verdict)
    assert rules["ttft.p90 <= +10%"].status == "no_data" and verdict.exit_code in (1, 3)
    assert "20 requests on the candidate side were cut off before their first token" in rules["ttft.p90 <= +10%"].note
    assert rules["ttft.p50 <= +10%"].status != "no_data"  # the cut-off waits lie above the median: it is exact
    assert rules["error_rate <= 50%"].status == "pass"
