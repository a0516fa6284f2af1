"""The console summary says "n/a" and why, where a rate is undefined; it never prints 0.0 for no data."""

from harness.console import format_summary
from harness.metrics import records_frame, summarize
from tests.fixtures.records import make_record


def _metrics(records: list[dict]) -> dict:
    summary = summarize(records_frame(records), n_boot=20)
    return {"engines": {"e": summary}, "runs": [{"engine": "e", "trial": 0, "summary": summary}]}


def test_a_burst_prints_na_and_the_reason_not_zero() -> None:
    text = format_summary(_metrics([make_record(f"r{i}", ttft=0.1 * (i + 1), gaps=[0.05] * 3) for i in range(12)]))
    header, row = text.splitlines()[:2]
    assert "out tok/s" in header and "0.0" not in row.split()
    assert row.split().count("n/a") == 2  # output tok/s and goodput
    assert "! e: steady-window rates n/a: no steady window: every request was scheduled at the same instant" in text


def test_a_steady_run_prints_its_rates() -> None:
    text = format_summary(_metrics([make_record(f"r{i}", t_scheduled=0.5 * i, gaps=[0.05] * 3) for i in range(40)]))
    assert "n/a" not in text


def test_a_trial_on_a_busy_machine_is_said_on_the_console() -> None:
    metrics = _metrics([make_record(f"r{i}", t_scheduled=0.5 * i, gaps=[0.05] * 3) for i in range(40)])
    busy = "ran on a busy machine: other processes used 55% of the machine's CPU (1-min load average 2.9)"
    metrics["runs"][0]["machine"] = {"busy": True, "message": busy}
    assert f"! e trial 0 {busy}" in format_summary(metrics)


def test_a_p99_of_a_small_run_is_said_to_be_its_largest_value() -> None:
    text = format_summary(_metrics([make_record(f"r{i}", t_scheduled=0.5 * i, gaps=[0.05] * 3) for i in range(40)]))
    assert "! e: p99 here is about the largest value (TTFT of 40, TPOT of 40, E2E of 40 requests)" in text
    assert "p99 needs 200 requests" in text
