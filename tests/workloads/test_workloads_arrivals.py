"""Synthetic arrivals hit their target rate and CV (fixed seeds, tolerances stated per test)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from workloads import WorkloadError, load_workload
from workloads.arrivals import ArrivalProcess, arrival_times, parse_arrival

N = 20_000


def gaps_of(process: ArrivalProcess, rate: float, seed: int = 7) -> np.ndarray:
    return np.diff(arrival_times(process, rate, np.random.default_rng(seed), count=N + 1))


def test_poisson_rate_cv_and_exponential_gaps() -> None:
    gaps = gaps_of(ArrivalProcess("poisson"), rate=5.0)
    assert 1 / gaps.mean() == pytest.approx(5.0, rel=0.03)  # 3 sigma of the mean of 20k gaps is ~2%
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)
    assert stats.kstest(gaps, "expon", args=(0, 1 / 5.0)).pvalue > 0.01


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_rate_cv_and_gamma_gaps(cv: float) -> None:
    gaps = gaps_of(ArrivalProcess("gamma", cv), rate=3.0)
    shape = 1 / cv**2
    assert 1 / gaps.mean() == pytest.approx(3.0, rel=0.02 * cv + 0.02)  # heavier tails, looser mean
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.08)
    # KS on the drawn gaps: differences of arrival times lose sub-nanosecond gaps to float rounding.
    raw = ArrivalProcess("gamma", cv).gaps(np.random.default_rng(7), 3.0, N)
    assert stats.kstest(raw, "gamma", args=(shape, 0, 1 / (3.0 * shape))).pvalue > 0.01


def test_constant_rate_is_exactly_periodic() -> None:
    times = arrival_times(ArrivalProcess("constant", 0.0), 4.0, np.random.default_rng(0), count=9)
    assert times.tolist() == [i * 0.25 for i in range(9)]


def test_horizon_stops_before_the_end_and_starts_at_start() -> None:
    times = arrival_times(ArrivalProcess("gamma", 4.0), 10.0, np.random.default_rng(3), horizon_s=50.0, start_s=5.0)
    assert times[0] == 5.0 and times[-1] < 55.0
    assert np.all(np.diff(times) >= 0)


def test_burst_preset_is_gamma_cv_4_and_realises_it_over_a_long_run() -> None:
    w = load_workload("burst", duration_s=5000.0)
    assert w.spec["source"]["tenants"][0]["arrival"] == {"process": "gamma", "cv": 4.0}
    d = w.describe()
    assert d["interarrival_cv"] == pytest.approx(4.0, rel=0.15)
    assert d["mean_rate_rps"] == pytest.approx(4.0, rel=0.15)


def test_closed_loop_has_users_think_time_and_no_timestamps() -> None:
    w = load_workload("closed-loop-small")
    assert (w.closed_loop_users, w.think_time_s) == (8, 0.5)
    assert len(w.requests) == 64 and {r.arrival_s for r in w.requests} == {0.0}
    d = w.describe()
    assert d["mean_rate_rps"] is None and d["closed_loop_users"] == 8
    # A trace can be replayed as a closed loop too: same requests in the same order, no timestamps.
    trace = load_workload("azure-conv", first=50)
    loop = load_workload("azure-conv", first=50, closed_loop_users=4, think_time_s=1.0)
    assert [r.input_tokens for r in loop.requests] == [r.input_tokens for r in trace.requests]
    assert loop.closed_loop_users == 4 and loop.think_time_s == 1.0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"process": "gamma"}, "arrival.cv: a gamma process needs a finite cv > 0, found None"),
        ({"process": "poisson", "cv": 3}, "arrival.cv: a poisson process has CV 1"),
        ("weibull", "arrival.process: unknown process 'weibull'"),
    ],
)
def test_bad_arrival_specs(value: object, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse_arrival(value)


@pytest.mark.parametrize("seed", range(10))
def test_a_synthetic_rate_is_offered_exactly(seed: int) -> None:
    # before: 240 Poisson arrivals "at 8 req/s" spanned 7.1 to 10.2 req/s depending on the seed
    for options in ({"requests": 240}, {"duration_s": 30.0}):
        d = load_workload("chat-small", rate=8.0, seed=seed, **options).describe()
        assert d["requests"] == 240 and d["mean_rate_rps"] == pytest.approx(8.0, rel=1e-9), options
    bursty = load_workload("burst", rate=8.0, requests=240, seed=seed).describe()
    assert bursty["mean_rate_rps"] == pytest.approx(8.0, rel=1e-9) and bursty["interarrival_cv"] > 2
    tenants = load_workload("noisy-neighbour", rate=8.0, requests=240, seed=seed).describe()  # ten merged streams
    assert tenants["mean_rate_rps"] == pytest.approx(8.0, rel=1e-9)
