import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.metrics import bootstrap_ci, describe, percentiles
from harness.metrics.stats import bootstrap_quantiles


def test_percentile_points_hand_computed() -> None:
    # Linear interpolation on 1..10: position h = 9q; p50 -> 4.5 -> 5.5, p90 -> 8.1 -> 9 + 0.1 * 1 = 9.1,
    # p95 -> 8.55 -> 9.55, p99 -> 8.91 -> 9.91, p99.9 -> 8.991 -> 9.991.
    table = percentiles(np.arange(1.0, 11.0), n_boot=0)
    assert table.index.tolist() == ["p50", "p90", "p95", "p99", "p99.9"]
    assert table["value"].tolist() == pytest.approx([5.5, 9.1, 9.55, 9.91, 9.991])
    assert table["n"].tolist() == [10] * 5
    assert table["ci_low"].isna().all()  # n_boot = 0 skips the intervals


def test_percentiles_drop_nan_and_handle_empty() -> None:
    table = percentiles([np.nan, 1.0, 3.0, np.inf], (50.0,))
    assert table.loc["p50", "value"] == 2.0
    assert table.loc["p50", "n"] == 2
    empty = percentiles([np.nan], (50.0, 99.0))
    assert empty["value"].isna().all() and empty["ci_high"].isna().all()


def test_ci_contains_point_estimate_and_narrows_with_more_data() -> None:
    rng = np.random.default_rng(7)
    small = percentiles(rng.lognormal(size=100), seed=1)
    large = percentiles(rng.lognormal(size=10_000), seed=1)
    for table in (small, large):
        assert (table["ci_low"] <= table["value"]).all()
        assert (table["value"] <= table["ci_high"]).all()
    width_small = small["ci_high"] - small["ci_low"]
    width_large = large["ci_high"] - large["ci_low"]
    assert (width_large[["p50", "p90", "p99"]] < width_small[["p50", "p90", "p99"]]).all()
    # 100x the data: a quantile's CI should shrink roughly 10x; demand at least 3x for p50.
    assert width_large["p50"] < width_small["p50"] / 3


def test_bootstrap_is_seeded() -> None:
    x = np.random.default_rng(0).exponential(size=500)
    a, b, c = percentiles(x, seed=3), percentiles(x, seed=3), percentiles(x, seed=4)
    assert a.equals(b)
    assert not a["ci_low"].equals(c["ci_low"])


def test_order_statistic_bootstrap_matches_naive_resampling() -> None:
    # The fast sampler must reproduce the distribution of np.quantile over with-replacement resamples.
    x = np.sort(np.random.default_rng(1).lognormal(size=200))
    probs = np.array([0.5, 0.9, 0.99])
    fast = bootstrap_quantiles(x, probs, 20_000, np.random.default_rng(2))
    idx = np.random.default_rng(3).integers(0, x.size, size=(20_000, x.size))
    naive = np.quantile(x[idx], probs, axis=1).T
    np.testing.assert_allclose(fast.mean(axis=0), naive.mean(axis=0), rtol=0.02)
    np.testing.assert_allclose(fast.std(axis=0), naive.std(axis=0), rtol=0.06)
    np.testing.assert_allclose(
        np.quantile(fast, [0.025, 0.975], axis=0), np.quantile(naive, [0.025, 0.975], axis=0), rtol=0.05
    )


def test_percentiles_of_100k_values() -> None:
    # speed lives in the benchmarks (tests/benchmarks); this checks the large case is right
    x = np.random.default_rng(0).exponential(size=100_000)
    table = percentiles(x, n_boot=1000)
    assert abs(table.loc["p50", "value"] - np.log(2)) < 0.01
    assert table.loc["p50", "ci_low"] <= table.loc["p50", "value"] <= table.loc["p50", "ci_high"]


def test_ci_coverage_of_true_median_is_near_nominal() -> None:
    # 300 samples of Exp(1), n = 200 each: the 95% CI should cover the true median ln 2 about 95% of
    # the time (the percentile bootstrap of a median is slightly conservative or liberal by a few %).
    rng = np.random.default_rng(11)
    hits = 0
    for i in range(300):
        row = percentiles(rng.exponential(size=200), (50.0,), n_boot=500, seed=i).iloc[0]
        hits += row["ci_low"] <= np.log(2) <= row["ci_high"]
    assert 0.88 <= hits / 300 <= 0.99


def test_bootstrap_ci_of_mean_contains_mean() -> None:
    x = np.random.default_rng(5).normal(10.0, 2.0, size=400)
    low, high = bootstrap_ci(x, np.mean, n_boot=500, seed=0, max_chunk_elements=10_000)
    assert low < x.mean() < high
    # Normal theory: half-width ~ 1.96 * 2 / 20 = 0.196.
    assert (high - low) / 2 == pytest.approx(0.196, rel=0.2)
    assert np.isnan(bootstrap_ci([], np.mean)[0])


def test_describe_is_plain_python() -> None:
    d = describe([1.0, 2.0, 3.0, np.nan], (50.0,), n_boot=100)
    assert d["count"] == 3 and d["mean"] == 2.0 and d["min"] == 1.0 and d["max"] == 3.0
    assert d["percentiles"]["p50"]["value"] == 2.0
    assert isinstance(d["percentiles"]["p50"]["ci_low"], float)
    empty = describe([])
    assert empty["mean"] is None and empty["percentiles"]["p99"]["value"] is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=200), st.integers(0, 2**16))
def test_ci_is_ordered_and_inside_data_range(values: list[float], seed: int) -> None:
    table = percentiles(values, n_boot=200, seed=seed)
    lo, hi = min(values), max(values)
    assert (table["ci_low"] <= table["ci_high"]).all()
    assert (table["ci_low"] >= lo).all() and (table["ci_high"] <= hi).all()
    assert ((table["value"] >= lo) & (table["value"] <= hi)).all()


def test_the_quantiles_without_scipy_stats_are_its_own_bit_for_bit():
    """t_quantile and normal_quantile stand in for scipy.stats.t.ppf and norm.ppf on every run's path (they spare
    importing scipy.stats): the same value to the last bit, out to the tails and at the edges."""
    from scipy import stats

    from harness.metrics.stats import normal_quantile, t_quantile

    qs = [-0.1, 0.0, 1e-12, 0.001, 0.025, 0.05, 0.1, 0.5, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-12, 1.0, 1.5]
    qs.append(float("nan"))
    for q in qs:
        assert np.array_equal(normal_quantile(q), float(stats.norm.ppf(q)), equal_nan=True), q
        for dof in (0, 1, 2, 3, 4, 7, 19, 29, 99, 1000, 2.5):
            assert np.array_equal(t_quantile(q, dof), float(stats.t.ppf(q, dof)), equal_nan=True), (q, dof)


def test_the_known_quantiles_are_scipys_bit_for_bit():
    """The constants t_quantile and normal_quantile answer without scipy.special (a report's two 95% intervals)
    are scipy.stats' values to the last bit, and are what the functions return."""
    from scipy import stats

    from harness.metrics.stats import KNOWN_NORMAL_QUANTILES, KNOWN_T_QUANTILES, normal_quantile, t_quantile

    assert KNOWN_T_QUANTILES and KNOWN_NORMAL_QUANTILES
    for (q, dof), value in KNOWN_T_QUANTILES.items():
        assert value.hex() == float(stats.t.ppf(q, dof)).hex() == t_quantile(q, dof).hex(), (q, dof)
    for q, value in KNOWN_NORMAL_QUANTILES.items():
        assert value.hex() == float(stats.norm.ppf(q)).hex() == normal_quantile(q).hex(), q
