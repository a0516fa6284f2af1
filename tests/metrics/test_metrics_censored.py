"""Requests a run cut off while they waited count in TTFT and E2E as lower bounds, never drop out."""

from __future__ import annotations

import numpy as np
import pytest

from harness.metrics import records_frame, request_latencies, summarize
from harness.metrics.stats import censored_reaches, describe
from tests.fixtures.records import make_record


def cut(request_id: str, t_scheduled: float, t_stop: float, **kw) -> dict:
    """A request aborted by the run's stop rule at t_stop with no output token."""
    base = make_record(request_id, t_scheduled=t_scheduled)
    return dict(
        base,
        t_first_token=None,
        token_times=[],
        output_tokens=0,
        t_finish=t_stop,
        finish_reason="abort",
        error_type=kw.get("error_type"),
        t_admitted=None,
    )


def test_a_request_cut_off_without_a_first_token_counts_its_wait_as_a_lower_bound() -> None:
    frame = records_frame(
        [make_record("served", ttft=0.5), cut("waited", 1.0, 21.0), cut("stopped", 2.0, 12.0, error_type="stopped")]
    )
    lat = request_latencies(frame).set_index("request_id")
    assert np.isnan(lat.loc["waited", "ttft"])  # the observed-only column is as before
    assert lat.loc["waited", "ttft_or_wait"] == pytest.approx(20.0) and lat.loc["waited", "ttft_censored"]
    assert lat.loc["stopped", "e2e_or_wait"] == pytest.approx(10.0) and lat.loc["stopped", "e2e_censored"]
    assert lat.loc["served", "ttft_or_wait"] == pytest.approx(0.5) and not lat.loc["served", "ttft_censored"]


def test_a_cut_off_request_that_had_its_first_token_keeps_its_observed_ttft() -> None:
    streaming = make_record("s", t_scheduled=0.0, ttft=0.3, gaps=[0.1], finish_reason="abort", t_finish=5.0)
    lat = request_latencies(records_frame([streaming])).iloc[0]
    assert lat["ttft_or_wait"] == pytest.approx(0.3) and not lat["ttft_censored"]
    assert lat["e2e_or_wait"] == pytest.approx(5.0) and lat["e2e_censored"]  # it would have run longer


def test_a_quantile_is_a_lower_bound_exactly_when_a_censored_value_reaches_it() -> None:
    values = np.arange(1.0, 101.0)  # 1..100
    censored = values >= 96  # the five largest are lower bounds
    assert censored_reaches(values, censored, [0.5, 0.94, 0.95, 0.99]) == [False, False, True, True]
    # a censored value far below still reaches every quantile: its true value may lie above any of them
    assert censored_reaches(values, values == 3, [0.5, 0.99]) == [True, True]
    assert censored_reaches(values, None, [0.99]) == [False]


def test_describe_marks_lower_bounds_and_drops_their_unknown_upper_end() -> None:
    values = np.arange(1.0, 101.0)
    d = describe(values, [50, 99], censored=values >= 96, n_boot=200)
    assert d["censored"] == 5 and d["mean"] is None  # a mean over lower bounds is not the mean
    p50, p99 = d["percentiles"]["p50"], d["percentiles"]["p99"]
    assert not p50["lower_bound"] and p50["ci_high"] is not None
    assert p99["lower_bound"] and p99["ci_high"] is None and p99["ci_low"] is not None
    plain = describe(values, [99], n_boot=0)
    assert plain["censored"] == 0 and plain["percentiles"]["p99"]["lower_bound"] is False


def test_an_engine_that_served_few_requests_before_the_stop_does_not_get_the_better_p99() -> None:
    # Static batching stopped at 40 s: 14 requests served within 14 s, 59 waiting 20-38 s without a token.
    served = [make_record(f"s{i}", t_scheduled=float(i), ttft=1.0 + i * 0.9) for i in range(14)]
    waiting = [cut(f"w{i}", float(i) * 0.3, 40.0) for i in range(59)]
    frame = records_frame(served + waiting)
    summary = summarize(frame, n_boot=200)
    p99 = summary["latency"]["ttft"]["percentiles"]["p99"]
    served_only = max(1.0 + i * 0.9 for i in range(14))
    assert p99["lower_bound"] and p99["value"] > 2 * served_only
    assert summary["latency"]["ttft"]["count"] == 73 and summary["latency"]["ttft"]["censored"] == 59
    assert summary["latency"]["ttft_sent"]["count"] == 14  # the observed-only variants are unchanged
