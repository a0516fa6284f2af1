import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.metrics import (
    backlog_intervals,
    fairness,
    jain_index,
    records_frame,
    service_events,
    starvation,
    tenant_service,
    vtc_gap,
)
from tests.fixtures.records import make_record


def test_jain_index_hand_computed() -> None:
    assert jain_index([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0]) == pytest.approx(1 / 3)  # one of three gets everything
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / 42)  # (1+2+3)^2 / (3 * (1+4+9))
    assert jain_index([5.0, np.nan]) == pytest.approx(1.0)  # NaN dropped
    assert np.isnan(jain_index([]))
    assert np.isnan(jain_index([0.0, 0.0]))


@given(st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=50))
def test_jain_index_bounded_by_one_over_n_and_one(shares: list[float]) -> None:
    j = jain_index(shares)
    if not any(shares):
        assert np.isnan(j)
        return
    n = len(shares)
    assert 1 / n - 1e-9 <= j <= 1 + 1e-9


@given(st.floats(1e-6, 1e6), st.integers(1, 50))
def test_jain_index_equal_shares_is_one(share: float, n: int) -> None:
    assert jain_index([share] * n) == pytest.approx(1.0)


@pytest.fixture
def two_tenants():
    return records_frame(
        [
            # A: arrives 0, 4 prompt tokens, tokens at 1, 2, 3 (finish 3).
            make_record("a", tenant="A", t_scheduled=0.0, prompt_tokens=4, ttft=1.0, gaps=[1.0, 1.0]),
            # B: arrives 0, 2 prompt tokens, tokens at 2.5, 4, 5 (finish 5).
            make_record("b", tenant="B", t_scheduled=0.0, prompt_tokens=2, ttft=2.5, gaps=[1.5, 1.0]),
        ]
    )


def test_service_and_backlog_hand_computed(two_tenants) -> None:
    events = service_events(two_tenants)
    assert events["t"].is_monotonic_increasing
    svc = tenant_service(two_tenants)
    # A: 1 x 4 prompt + 2 x 3 output = 10 over [0, 3]; B: 1 x 2 + 2 x 3 = 8 over [0, 5].
    assert svc.loc["A", "service"] == 10.0 and svc.loc["B", "service"] == 8.0
    assert svc.loc["A", "backlogged_s"] == 3.0 and svc.loc["B", "backlogged_s"] == 5.0
    assert svc.loc["A", "service_rate"] == pytest.approx(10 / 3)
    assert svc.loc["B", "service_rate"] == pytest.approx(1.6)
    f = fairness(two_tenants)
    assert f["jain_index"] == pytest.approx((10 / 3 + 1.6) ** 2 / (2 * ((10 / 3) ** 2 + 1.6**2)))


def test_service_totals_are_the_service_events_summed() -> None:
    """tenant_service counts tokens instead of summing every increment: the totals must be the same. Requests
    never prefilled, failed mid-stream and of no output are among them."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        gaps = list(rng.uniform(0.01, 0.2, size=int(rng.integers(0, 6))))
        rows.append(
            make_record(
                f"r{i}",
                tenant=f"t{i % 4}",
                t_scheduled=float(rng.uniform(0, 5)),
                prompt_tokens=int(rng.integers(1, 40)),
                gaps=gaps,
            )
        )
    rows[5].update(t_first_token=None, token_times=[], output_tokens=0, t_finish=None, finish_reason="abort")
    rows[7].update(error_type="timeout", finish_reason="error")
    records = records_frame(rows)
    for weights in ({}, {"input_weight": 0.3, "output_weight": 1.7}):
        events = service_events(records, **weights)
        totals = events.groupby("tenant")["service"].sum()
        service = tenant_service(records, **weights)["service"]
        assert sorted(service.index) == sorted(totals.index) == ["t0", "t1", "t2", "t3"]
        np.testing.assert_allclose(service.loc[totals.index].to_numpy(), totals.to_numpy(), rtol=1e-12)


def test_vtc_gap_hand_computed(two_tenants) -> None:
    # Both backlogged on [0, 3]. D = W_A - W_B: 0 at t=0, 6 at t=1 (A: prompt 4 + token 2),
    # 8 at t=2, 4 at t=2.5 (B: prompt 2 + token 2), 6 at t=3. Max - min = 8 - 0 = 8.
    gap = vtc_gap(two_tenants)
    assert gap["gap"] == pytest.approx(8.0)
    assert gap["tenants"] == ["A", "B"]
    assert gap["interval"] == [0.0, 3.0]


def test_vtc_gap_ignores_service_before_a_tenant_arrives() -> None:
    frame = records_frame(
        [
            # A alone from 0; tokens at 1, 2, 3, 4 (no prompt service, to keep the arithmetic small).
            make_record("a", tenant="A", t_scheduled=0.0, prompt_tokens=0, ttft=1.0, gaps=[1.0, 1.0, 1.0]),
            # B arrives at 2.5; tokens at 3.5, 4.5.
            make_record("b", tenant="B", t_scheduled=2.5, prompt_tokens=0, ttft=1.0, gaps=[1.0]),
        ]
    )
    # Co-backlogged [2.5, 4]. D(2.5) = 4 (A's tokens at 1 and 2), then 6 (t=3), 4 (t=3.5), 6 (t=4):
    # gap 2. A cumulative-from-start comparison would have reported 6 (W_A(4) = 8 vs W_B(4) = 2).
    gap = vtc_gap(frame)
    assert gap["gap"] == pytest.approx(2.0)
    assert gap["interval"] == [2.5, 4.0]


def test_vtc_gap_simultaneous_tokens_are_not_a_gap_and_edge_cases() -> None:
    same = [make_record(r, tenant=r, prompt_tokens=3, gaps=[0.1, 0.1]) for r in ("A", "B", "C")]
    assert vtc_gap(records_frame(same))["gap"] == 0.0  # one batch, identical service at identical times
    assert vtc_gap(records_frame(same[:1]))["gap"] is None  # one tenant: no pair to compare
    apart = records_frame(
        [make_record("a", tenant="A", t_scheduled=0.0), make_record("b", tenant="B", t_scheduled=10.0)]
    )
    assert vtc_gap(apart) == {"gap": 0.0, "tenants": ["A", "B"], "interval": None}  # never competed


def test_backlog_intervals_merge_overlaps() -> None:
    frame = records_frame(
        [
            make_record("1", tenant="A", t_scheduled=0.0, ttft=1.0),  # [0, 1]
            make_record("2", tenant="A", t_scheduled=0.5, ttft=1.0),  # [0.5, 1.5] -> merged [0, 1.5]
            make_record("3", tenant="A", t_scheduled=3.0, ttft=1.0),  # [3, 4]
        ]
    )
    iv = backlog_intervals(frame)
    assert iv[["start", "end"]].to_numpy().tolist() == [[0.0, 1.5], [3.0, 4.0]]


def test_slowdown_ratio_and_starvation() -> None:
    frame = records_frame(
        [
            # X: admitted at 1, finishes at 2 -> slowdown 2 / (2 - 1) = 2.
            make_record("x", tenant="X", t_scheduled=0.0, t_admitted=1.0, ttft=2.0),
            # Y: admitted at once, finishes at 1 -> slowdown 1.
            make_record("y", tenant="Y", t_scheduled=0.0, t_admitted=0.0, ttft=1.0),
            # Z: waits 3 s for admission -> the starvation maximum.
            make_record("z", tenant="Y", t_scheduled=1.0, t_admitted=4.0, ttft=3.5),
            # Never admitted; failed at 6 after arriving at 4: seen waiting 2 s.
            make_record(
                "w",
                tenant="X",
                t_scheduled=4.0,
                t_admitted=None,
                t_first_token=None,
                t_finish=6.0,
                token_times=[],
                output_tokens=0,
                error_type="timeout",
                finish_reason="error",
            ),
        ]
    )
    f = fairness(frame)
    # z: E2E 4.5 - 1 = 3.5, served 4.5 - 4 = 0.5 -> slowdown 7. Y's p99 of {1, 7} is 1 + 0.99 * 6 = 6.94.
    assert f["p99_slowdown_by_tenant"] == pytest.approx({"X": 2.0, "Y": 6.94})
    assert f["p99_slowdown_max_min_ratio"] == pytest.approx(6.94 / 2.0)
    s = starvation(frame)
    assert s["max_queue_delay_s"] == 3.0 and s["request_id"] == "z" and s["tenant"] == "Y"
    assert s["never_admitted"] == 1 and s["never_admitted_max_wait_s"] == 2.0
