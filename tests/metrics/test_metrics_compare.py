import pytest

from harness.errors import HarnessInputError
from harness.metrics import paired_deltas, paired_summary, records_frame
from tests.fixtures.records import make_record


def _run(engine: str, ttft: float, ids=range(20)):
    return records_frame([make_record(f"r{i}", engine=engine, t_scheduled=float(i), ttft=ttft + 0.01 * i) for i in ids])


def test_paired_deltas_join_on_request_id() -> None:
    a, b = _run("static", 0.5), _run("continuous", 0.3, ids=range(1, 21))
    d = paired_deltas(a, b)
    assert len(d) == 19  # r1..r19 in both
    assert d["ttft_delta"].to_numpy() == pytest.approx([-0.2] * 19)  # same offsets, 0.2 s lower base
    assert d.set_index("request_id").loc["r1", "ttft_ratio"] == pytest.approx(0.31 / 0.51)
    assert d.attrs["only_in_a"] == ["r0"] and d.attrs["only_in_b"] == ["r20"]


def test_paired_summary_hand_computed() -> None:
    d = paired_deltas(_run("static", 0.5), _run("continuous", 0.3))
    s = paired_summary(d, seed=0)
    assert s.loc["ttft", "n"] == 20
    assert s.loc["ttft", "median_delta"] == pytest.approx(-0.2)
    assert s.loc["ttft", "median_delta_ci_low"] == pytest.approx(-0.2)  # every delta is -0.2
    assert s.loc["ttft", "share_b_lower"] == 1.0
    assert s.loc["tpot", "n"] == 0  # single-token outputs: TPOT undefined everywhere


def test_paired_deltas_reject_different_schedules() -> None:
    a = _run("static", 0.5)
    b = records_frame([make_record(f"r{i}", t_scheduled=float(i) + 0.5) for i in range(20)])
    with pytest.raises(HarnessInputError, match="scheduled at different times"):
        paired_deltas(a, b)
    assert len(paired_deltas(a, b, check_schedule=False)) == 20


def test_paired_deltas_reject_duplicate_ids() -> None:
    a = records_frame([make_record("r0"), make_record("r0", trial=1)])
    with pytest.raises(HarnessInputError, match="duplicate"):
        paired_deltas(a, a)


def test_trial_interval_never_leaves_what_the_metric_can_be() -> None:
    from harness.metrics.compare_runs import mean_ci, repeat_summary

    # Two trials far apart: the raw t-interval of the mean is about -6.7 s to +11 s.
    ci = mean_ci([0.5, 3.96])
    assert ci["ci_low"] == 0.0 and ci["clipped"] is True
    assert ci["ci_high"] > 3.96
    assert mean_ci([1.0, 1.1, 0.9])["clipped"] is False
    summaries = [{"slo": {"attainment": a}} for a in (0.99, 0.5)]
    repeat = repeat_summary([{"engine": "e", "summary": s} for s in summaries])
    assert repeat["e"]["slo_attainment"]["ci_high"] == 1.0
    assert repeat["e"]["ttft_p99_s"]["n"] == 0  # absent everywhere: no number at all
