"""Length distributions: fixed, uniform, normal, lognormal, empirical and mixtures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from workloads import WorkloadError
from workloads.bundled import read_bundled
from workloads.lengths import Empirical, Mixture, parse_length

N = 20_000


def draw(spec: object, seed: int = 11) -> np.ndarray:
    return parse_length(spec, "output").sample(np.random.default_rng(seed), N)


def test_fixed_and_bare_integer() -> None:
    assert set(draw(64).tolist()) == {64}
    assert set(draw({"dist": "fixed", "value": 7}).tolist()) == {7}


def test_uniform_is_inclusive_and_flat() -> None:
    x = draw({"dist": "uniform", "low": 8, "high": 128})
    assert (x.min(), x.max()) == (8, 128)
    assert stats.chisquare(np.bincount(x - 8)).pvalue > 0.01


def test_normal_mean_std_and_clipping() -> None:
    x = draw({"dist": "normal", "mean": 64, "std": 8, "min": 50})
    assert x.min() == 50
    unclipped = draw({"dist": "normal", "mean": 64, "std": 8})
    assert unclipped.mean() == pytest.approx(64, abs=0.3) and unclipped.std() == pytest.approx(8, abs=0.2)


def test_lognormal_median_sigma_and_cap() -> None:
    x = draw({"dist": "lognormal", "median": 1024, "sigma": 0.3})
    assert np.median(x) == pytest.approx(1024, rel=0.02)
    assert np.log(x).std() == pytest.approx(0.3, abs=0.01)
    assert draw({"dist": "lognormal", "median": 1024, "sigma": 0.3, "max": 1536}).max() == 1536


def test_empirical_resamples_the_named_trace() -> None:
    x = draw({"dist": "empirical", "trace": "azure-conv"})  # field defaults to the slot: output
    source = read_bundled("azure-conv").frame["output_tokens"].to_numpy()
    assert set(x.tolist()) <= set(source.tolist())
    assert stats.ks_2samp(x, source).pvalue > 0.01


def test_empirical_field_defaults_to_the_slot_even_inside_a_mixture() -> None:
    part = {"weight": 1, "dist": "empirical", "trace": "azure-code"}
    nested = parse_length({"dist": "mixture", "components": [part]}, "tenants[0].output")
    assert isinstance(nested, Mixture) and nested.components == (Empirical("azure-code", "output"),)
    plain = parse_length({"dist": "empirical", "trace": "azure-code"}, "tenants[0].input")
    assert plain == Empirical("azure-code", "input")


def test_mixture_of_short_chat_and_long_generation() -> None:
    x = draw(
        {
            "dist": "mixture",
            "components": [
                {"weight": 9, "dist": "uniform", "low": 8, "high": 64},
                {"weight": 1, "dist": "fixed", "value": 1024},
            ],
        }
    )
    assert (x == 1024).mean() == pytest.approx(0.10, abs=0.01)  # 3 sigma of a 20k-draw proportion: 0.006
    assert x[x != 1024].max() <= 64


def test_lengths_are_at_least_one() -> None:
    assert draw({"dist": "normal", "mean": 1, "std": 50}).min() == 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"dist": "uniform", "low": 9, "high": 3}, r"output.high: high \(3\) is below low \(9\)"),
        ({"dist": "zipf"}, "output.dist: unknown dist 'zipf'"),
        ({"dist": "fixed", "value": 0}, r"output.value: expected an integer > 0, found 0"),
        ({"dist": "normal", "mean": 5}, "output.std: missing 'std'"),
        ({"dist": "empirical", "trace": "nope"}, "output.trace: unknown trace 'nope'"),
        ({"dist": "mixture", "components": [{"dist": "fixed", "value": 3}]}, "component 0 needs a weight > 0"),
        ({"dist": "fixed", "value": 3, "extra": 1}, "output.extra: unknown key 'extra'"),
    ],
)
def test_bad_length_specs(spec: object, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse_length(spec, "output")
