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
