"""Transforms: window, time scaling, rate override, sampling, clipping and spreading tied timestamps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from workloads import (
    Workload,
    WorkloadError,
    clip_to_context,
    load_workload,
    override_rate,
    sample_requests,
    spread_ties,
    time_scale,
    time_window,
)
from workloads.frame import make_frame
from workloads.transforms import clip


def lengths(w: Workload, field: str) -> np.ndarray:
    return np.array([getattr(r, field) for r in w.requests])


@pytest.fixture(scope="module")
def conv() -> Workload:
    return load_workload("azure-conv")


def test_time_window_keeps_and_retimes_the_slice(conv: Workload) -> None:
    arrivals = np.array([r.arrival_s for r in conv.requests])
    expected = int(((arrivals >= 600) & (arrivals < 900)).sum())
    w = load_workload("azure-conv", start_s=600, duration_s=300)
    got = np.array([r.arrival_s for r in w.requests])
    assert len(got) == expected and got.min() >= 0 and got.max() < 300
    assert w.notes == [f"kept {expected} of 19366 requests arriving in [600 s, 900 s)"]
    assert time_window(conv, 600, 300).fingerprint() == w.fingerprint()


def test_time_scaling_speeds_up_and_keeps_every_length(conv: Workload) -> None:
    fast = load_workload("azure-conv", time_scale=4.0)
    d0, d1 = conv.describe(), fast.describe()
    assert d1["mean_rate_rps"] == pytest.approx(4 * d0["mean_rate_rps"], rel=1e-6)
    assert d1["span_s"] == pytest.approx(d0["span_s"] / 4, rel=1e-6)
    assert d1["interarrival_cv"] == pytest.approx(d0["interarrival_cv"], rel=1e-6)
    for field in ("input_tokens", "output_tokens"):
        assert lengths(fast, field).tolist() == lengths(conv, field).tolist()  # same requests, same order
    assert time_scale(conv, 4.0).fingerprint() == fast.fingerprint()


@pytest.mark.parametrize("rate", [1.5, 12.0])
def test_rate_override_hits_the_rate_and_keeps_the_length_distribution(conv: Workload, rate: float) -> None:
    w = load_workload("azure-conv", rate=rate)
    d = w.describe()
    assert d["mean_rate_rps"] == pytest.approx(rate, rel=1e-3)  # arrivals are scaled to hit it exactly
    assert d["span_s"] == pytest.approx(conv.describe()["span_s"], rel=1e-3)
    assert d["interarrival_cv"] == pytest.approx(1.094, rel=0.10)  # the source CV, by default
    for field in ("input_tokens", "output_tokens"):  # two-sample KS: same distribution, fixed seed
        assert stats.ks_2samp(lengths(w, field), lengths(conv, field)).pvalue > 0.05
    assert override_rate(conv, rate).fingerprint() == w.fingerprint()


def test_rate_override_with_a_new_cv_and_on_a_bursty_trace() -> None:
    poisson = load_workload("azure-code", rate=10.0, rate_cv=1.0).describe()
    assert poisson["mean_rate_rps"] == pytest.approx(10.0, rel=1e-3)
    assert poisson["interarrival_cv"] == pytest.approx(1.0, abs=0.05)
    kept = load_workload("azure-code", rate=10.0).describe()  # CV 13 is kept: still very bursty
    assert kept["interarrival_cv"] > 5


def test_rate_on_a_synthetic_workload_scales_every_tenant() -> None:
    base = load_workload("noisy-neighbour")
    double = load_workload("noisy-neighbour", rate=8.0)
    assert double.spec["source"]["tenants"][0]["rate"] == pytest.approx(4.0)
    share = sum(r.tenant == "noisy" for r in double.requests) / len(double.requests)
    assert share == pytest.approx(0.5, abs=0.05)
    assert len(double.requests) == pytest.approx(2 * len(base.requests), rel=0.1)


def test_first_and_sample(conv: Workload) -> None:
    head = load_workload("azure-conv", first=100)
    assert lengths(head, "input_tokens").tolist() == lengths(conv, "input_tokens")[:100].tolist()
    sampled = load_workload("azure-conv", requests=500)
    assert len(sampled.requests) == 500
    assert sampled.notes[0].startswith("sampled 500 of 19366 requests")
    assert stats.ks_2samp(lengths(sampled, "output_tokens"), lengths(conv, "output_tokens")).pvalue > 0.05
    assert sample_requests(conv, 500).fingerprint() == sampled.fingerprint()
    assert load_workload("azure-conv", requests=500, seed=1).fingerprint() != sampled.fingerprint()


def test_clip_to_context_fits_everything_and_counts_it() -> None:
    w = load_workload("mooncake-conv", max_context=4096)
    n_in, n_out = lengths(w, "input_tokens"), lengths(w, "output_tokens")
    assert (n_in + n_out).max() <= 4096 and n_in.min() >= 1
    raw = load_workload("mooncake-conv")
    over = int((lengths(raw, "input_tokens") + lengths(raw, "output_tokens") > 4096).sum())
    assert w.notes == [f"clipped {over} requests to max_context=4096 ({over} prompts and 0 outputs shortened)"]
    for r in w.requests:  # prefix blocks past the clipped prompt are gone
        assert len(r.prefix_hash_ids) == -(-r.input_tokens // 512)
    assert clip_to_context(raw, 4096).fingerprint() == w.fingerprint()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 200_000), st.integers(1, 5_000)), min_size=1, max_size=20), st.integers(2, 32_768)
)
def test_clip_invariants(pairs: list[tuple[int, int]], context: int) -> None:
    n_in, n_out = np.array(pairs).T
    frame = make_frame(np.arange(len(pairs), dtype=float), n_in, n_out)
    out, _ = clip(frame, {"op": "clip", "max_context": context})
    new_in, new_out = out["input_tokens"].to_numpy(), out["output_tokens"].to_numpy()
    assert np.all(new_in + new_out <= context)
    assert np.all((new_in <= n_in) & (new_out <= n_out)) and np.all(new_in >= 1) and np.all(new_out >= 1)
    fits = n_in + n_out <= context
    assert np.array_equal(new_in[fits], n_in[fits]) and np.array_equal(new_out[fits], n_out[fits])


def test_spread_ties_breaks_mooncake_steps_within_each_step() -> None:
    raw = load_workload("mooncake-conv")
    spread = load_workload("mooncake-conv", jitter=True)
    t0 = np.array([r.arrival_s for r in raw.requests])
    t1 = np.array([r.arrival_s for r in spread.requests])
    assert len(np.unique(t0)) == 1180 and len(np.unique(t1)) > 12_000
    assert lengths(spread, "input_tokens").tolist() == lengths(raw, "input_tokens").tolist()  # order kept
    steps = np.unique(t0)
    next_step = np.append(steps[1:], np.inf)[np.searchsorted(steps, t0)]
    assert np.all(t1 >= t0) and np.all(t1 < next_step)  # each request stays inside its own ~3 s step
    assert spread.describe()["peak_1s_requests"] < raw.describe()["peak_1s_requests"]
    assert spread_ties(raw).fingerprint() == spread.fingerprint()
    assert spread_ties(raw, seed=5).fingerprint() != spread.fingerprint()


def test_spread_ties_width_caps_the_spread() -> None:
    w = load_workload("mooncake-conv", jitter_width_s=0.5)
    raw = load_workload("mooncake-conv")
    delta = np.array([r.arrival_s for r in w.requests]) - np.array([r.arrival_s for r in raw.requests])
    assert delta.min() >= 0 and delta.max() < 0.5


def test_timed_transforms_refuse_a_closed_loop() -> None:
    with pytest.raises(WorkloadError, match=r"^time_scale: a closed-loop workload has no arrival times"):
        time_scale(load_workload("closed-loop-small"), 2.0)
    with pytest.raises(WorkloadError, match=r"^time_scale: a synthetic closed loop has no arrival times"):
        load_workload("closed-loop-small", time_scale=2.0)
