import numpy as np
import pytest

from harness.metrics import inter_token_latencies, records_frame, request_latencies
from tests.fixtures.records import make_record


@pytest.fixture
def frame():
    return records_frame(
        [
            # Scheduled 1.0, sent 1.002, admitted 1.5; tokens 2.0, 2.1, 2.3, 2.6; finished 2.7.
            make_record(
                "a",
                t_scheduled=1.0,
                t_sent=1.002,
                t_admitted=1.5,
                ttft=1.0,
                gaps=[0.1, 0.2, 0.3],
                finish_after_last=0.1,
            ),
            make_record("one", t_scheduled=3.0, ttft=0.4),  # a single output token
            make_record("fail", t_scheduled=4.0, gaps=[0.5], error_type="timeout", finish_reason="error"),
            make_record("d", t_scheduled=4.9, ttft=0.1, gaps=[0.05]),  # tokens 5.0, 5.05
        ]
    )


def test_request_latencies_hand_computed(frame) -> None:
    lat = request_latencies(frame).set_index("request_id")
    a = lat.loc["a"]
    assert a["ttft"] == pytest.approx(1.0)  # 2.0 - 1.0 (from the schedule)
    assert a["ttft_sent"] == pytest.approx(0.998)  # 2.0 - 1.002
    assert a["e2e"] == pytest.approx(1.7)  # 2.7 - 1.0
    assert a["e2e_sent"] == pytest.approx(1.698)
    assert a["tpot"] == pytest.approx(0.7 / 3)  # (E2E - TTFT) / (n - 1) = (1.7 - 1.0) / 3
    assert a["queue_delay"] == pytest.approx(0.5)  # 1.5 - 1.0
    assert a["queue_delay_sent"] == pytest.approx(0.498)
    assert a["normalized_latency"] == pytest.approx(1.7 / 4)
    assert a["slowdown"] == pytest.approx(1.7 / 1.2)  # E2E / (finish - admitted) = 1.7 / (2.7 - 1.5)
    assert a["schedule_lag"] == pytest.approx(0.002)
    assert bool(a["succeeded"])


def test_tpot_undefined_for_single_token_and_failures_have_no_latency(frame) -> None:
    lat = request_latencies(frame).set_index("request_id")
    assert np.isnan(lat.loc["one", "tpot"])
    assert lat.loc["one", "ttft"] == pytest.approx(0.4)
    assert not lat.loc["fail", "succeeded"]
    assert lat.loc["fail", ["ttft", "tpot", "e2e", "queue_delay"]].isna().all()
    assert lat.loc["fail", "schedule_lag"] == 0.0  # lag is defined for every request


def test_itl_pools_gaps_within_requests_only(frame) -> None:
    gaps = inter_token_latencies(frame)
    # a: 0.1, 0.2, 0.3; d: 0.05; "fail" excluded; no gap spans 2.6 -> 5.0 across requests.
    assert sorted(gaps.tolist()) == pytest.approx([0.05, 0.1, 0.2, 0.3])
    assert len(inter_token_latencies(frame, successful_only=False)) == 5


def test_itl_of_empty_frame_is_empty() -> None:
    assert inter_token_latencies(records_frame([])).size == 0
