import pytest

from harness.metrics import records_frame, run_window, run_windows, steady_window, throughput, throughput_table
from tests.fixtures.records import make_record


@pytest.fixture
def frame():
    # Arrivals at 0, 1, ..., 9; tokens at arrival + 0.5 and + 1.0; finish at + 1.0; 10 prompt tokens.
    recs = [make_record(f"r{i}", t_scheduled=float(i), ttft=0.5, gaps=[0.5], prompt_tokens=10) for i in range(10)]
    recs.append(make_record("bad", t_scheduled=5.0, gaps=[0.5], error_type="timeout", finish_reason="error"))
    return records_frame(recs)


def test_steady_window_excludes_first_tenth_of_arrivals_and_drain(frame) -> None:
    window = steady_window(frame)
    # 11 arrivals sorted: 0,1,2,3,4,5,5,6,7,8,9; floor(0.1 * 11) = 1 -> starts at the 2nd arrival (1.0).
    assert (window.start, window.end) == (1.0, 9.0)
    assert window.duration_s == 8.0


def test_steady_throughput_hand_computed(frame) -> None:
    tp = throughput(frame, steady_window(frame))
    # Successful finishes at 1, 2, ..., 10 -> 1..9 fall in [1, 9]: 9 requests over 8 s.
    assert tp["requests"] == 9
    assert tp["request_rate"] == pytest.approx(9 / 8)
    # Token times 0.5, 1.0, 1.5, ..., 10.0; inside [1, 9]: 1.0, 1.5, ..., 9.0 = 17 tokens.
    assert tp["output_tokens"] == 17
    assert tp["output_token_rate"] == pytest.approx(17 / 8)
    # Prompt tokens counted at the first token (i + 0.5) in [1, 9]: i = 1..8 -> 8 x 10.
    assert tp["prompt_tokens"] == 80
    assert tp["total_token_rate"] == pytest.approx((17 + 80) / 8)


def test_whole_run_throughput(frame) -> None:
    window = run_window(frame)
    assert (window.start, window.end) == (0.0, 10.0)
    tp = throughput(frame, window)
    assert tp["requests"] == 10  # the failed request is not throughput
    assert tp["output_tokens"] == 20
    assert tp["request_rate"] == pytest.approx(1.0)
    table = throughput_table(frame)
    assert table.index.tolist() == ["warmup", "steady", "drain", "whole_run"]
    assert table.loc["whole_run", "output_token_rate"] == pytest.approx(2.0)
    # Warm-up [0, 1]: tokens 0.5, 1.0 and the finish at 1.0; drain [9, 10]: tokens 9.0, 9.5, 10.0.
    assert (table.loc["warmup", "start"], table.loc["warmup", "end"]) == (0.0, 1.0)
    assert table.loc["warmup", "output_tokens"] == 2 and table.loc["warmup", "requests"] == 1
    assert (table.loc["drain", "start"], table.loc["drain", "end"]) == (9.0, 10.0)
    assert table.loc["drain", "output_tokens"] == 3


def test_burst_has_no_steady_window() -> None:
    frame = records_frame([make_record(f"r{i}", t_scheduled=0.0) for i in range(5)])
    assert steady_window(frame) is None
    assert run_windows(frame) == {"warmup": None, "steady": None, "drain": None, "whole_run": run_window(frame)}
    tp = throughput(frame, None)
    assert tp["request_rate"] is None and tp["requests"] == 0
    assert run_window(records_frame([])) is None


def test_a_burst_reports_no_steady_rate_with_the_reason_not_zero() -> None:
    frame = records_frame([make_record(f"r{i}", t_scheduled=0.0, ttft=0.1 * (i + 1)) for i in range(8)])
    tp = throughput(frame, steady_window(frame))
    assert tp["output_token_rate"] is None and tp["request_rate"] is None
    assert "burst" in tp["reason"]
    whole = throughput(frame, run_window(frame))
    assert whole["reason"] is None and whole["request_rate"] == pytest.approx(8 / 0.8)


def test_a_window_that_sees_too_few_completions_is_not_a_rate() -> None:
    # 64 requests due within 63 ms ("1000 req/s"), each taking a second: the steady window [6 ms, 63 ms]
    # holds no completion. Its rate is undefined, not 0 tok/s.
    recs = [make_record(f"r{i}", t_scheduled=i / 1000, ttft=1.0, gaps=[0.1] * 4) for i in range(64)]
    frame = records_frame(recs)
    tp = throughput(frame, steady_window(frame))
    assert tp["requests"] == 0 and tp["output_tokens"] == 0
    assert tp["output_token_rate"] is None
    assert tp["reason"] == (
        "no request finished inside the 0.057 s steady window (the run's first came at 1.4 s, "
        "the window closed at 0.063 s): a rate over it would measure a transient"
    )
    assert tp["reasons"]["output_token_rate"].startswith("no token was produced inside the 0.057 s steady window")
    assert throughput_table(frame).loc["steady", "reason"] == tp["reason"]


def test_a_long_window_in_which_little_finished_is_a_real_low_rate() -> None:
    # Arrivals every 0.5 s for 20 s; one request in twenty succeeds (in 3 s), the rest fail. The window is
    # longer than the median successful latency, so the low rate is measured, not hidden.
    failed = {"error_type": "timeout", "finish_reason": "error"}
    recs = [make_record(f"r{i}", t_scheduled=0.5 * i, ttft=3.0, **({} if i % 20 == 0 else failed)) for i in range(40)]
    frame = records_frame(recs)
    tp = throughput(frame, steady_window(frame))
    assert tp["reason"] is None and tp["requests"] == 2 and tp["request_rate"] == pytest.approx(2 / 17.5)


def test_an_overloaded_engine_keeps_its_token_rate_while_its_request_rate_is_a_transient() -> None:
    # 40 requests over 4 s, each producing tokens from 0.2 s on but finishing only after 6 s: the window
    # sees tokens flow (a real token rate) but cannot see requests through (no request rate).
    recs = [make_record(f"r{i}", t_scheduled=0.1 * i, ttft=0.2, gaps=[0.2] * 29) for i in range(40)]
    frame = records_frame(recs)
    tp = throughput(frame, steady_window(frame))
    assert tp["output_token_rate"] is not None and tp["output_token_rate"] > 0
    assert tp["request_rate"] is None and "the run's first came at 6 s" in tp["reasons"]["request_rate"]
    assert tp["reasons"]["output_token_rate"] is None and tp["reason"] == tp["reasons"]["request_rate"]
