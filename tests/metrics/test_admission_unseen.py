"""Queueing figures need the engine's admission time: an engine that reports none (an HTTP target) gets them
n/a with the reason; one that reports it (in-process, simulated) keeps them measured."""

from __future__ import annotations

from harness.metrics import records_frame, summarize
from harness.metrics.latency import ADMISSION_UNSEEN, admission_unseen
from tests.fixtures.records import make_record


def _summary(admitted: float | None) -> dict:
    records = [make_record(f"r{i}", t_scheduled=i * 0.1, t_admitted=admitted and i * 0.1 + admitted) for i in range(6)]
    return summarize(records_frame(records), n_boot=50)


def test_an_engine_that_reports_admission_keeps_its_queueing_measured() -> None:
    summary = _summary(0.05)
    assert summary["latency"]["queue_delay"]["percentiles"]["p50"]["value"] > 0
    assert "measured" not in summary["latency"]["queue_delay"]
    assert summary["fairness"]["starvation"]["never_admitted"] == 0
    assert summary["warnings"]["signals"]["longest_wait"]["measured"]


def test_an_engine_that_reports_no_admission_has_its_queueing_n_a_with_the_reason() -> None:
    summary = _summary(None)
    assert admission_unseen(records_frame([make_record("r", t_admitted=None)])) == ADMISSION_UNSEEN
    for metric in ("queue_delay", "queue_delay_sent", "slowdown"):
        assert summary["latency"][metric]["measured"] is False and summary["latency"][metric]["reason"]
    assert summary["fairness"]["starvation"]["never_admitted"] is None
    wait = summary["warnings"]["signals"]["longest_wait"]
    assert not wait["measured"] and wait["peak"] is None and wait["reason"] == ADMISSION_UNSEEN
