"""The fitted cost model: least squares recovers a known step-time law; unusable traces say why. These traces
predate the attention's split by kernel, so they fit the version-1 form (one price per attention pair), as an
old trace still does; tests/sim/test_fit_features.py fits the current form on counts from real plans."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.errors import EngineInputError
from engines.sim.fitted import REGRESSORS_V1, FittedCost, TraceSteps, fit_steps, load_profile, regressors
from engines.step_features import FEATURE_NAMES, StepFeatures

LAW = {
    "prefill_tokens": 20e-6,
    "prefill_chunks": 150e-6,
    "decode_seqs": 60e-6,
    "attended_context": 2e-9,
    "prompt_pad_rows": 15e-6,
    "held_rows": 50e-6,
}
INTERCEPT = 3e-3


def synthetic_steps(n: int = 400, seed: int = 0, noise: float = 0.0, pads: bool = False) -> TraceSteps:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        decode = int(rng.integers(0, 32))
        chunks = int(rng.integers(0, 3))
        prefill = int(rng.integers(1, 256)) * chunks
        held = int(rng.integers(0, 8)) if pads else 0
        pad = held + (int(rng.integers(0, 64)) if pads and chunks else 0)
        attended = decode * int(rng.integers(10, 500)) + prefill * int(rng.integers(1, 300))
        rows.append(StepFeatures(prefill, chunks, decode, pad, held, attended, 0, decode + chunks))
    x = np.array(rows, dtype=np.int64)
    law = np.array([LAW[name] for name in REGRESSORS_V1])
    durations = INTERCEPT + regressors(x, 1) @ law
    durations = durations * (1 + noise * rng.standard_normal(n))
    return TraceSteps(x, durations, np.full(n - 1, 1e-4), ["synthetic"], split=False)


def test_the_fit_recovers_the_law() -> None:
    profile = fit_steps(synthetic_steps())
    assert profile.intercept_s == pytest.approx(INTERCEPT, rel=1e-6)
    for name in ("prefill_tokens", "prefill_chunks", "decode_seqs", "attended_context"):
        assert profile.coefficients[name] == pytest.approx(LAW[name], rel=1e-6), name
    assert profile.fit["absent"] == ["prompt_pad_rows", "held_rows"]  # no static batch in this trace
    assert profile.coefficients["prompt_pad_rows"] == profile.coefficients["prefill_tokens"]  # priced as its kin
    assert profile.coefficients["held_rows"] == profile.coefficients["decode_seqs"]
    assert profile.fit["borrowed"] == {"prompt_pad_rows": "prefill_tokens", "held_rows": "decode_seqs"}
    assert profile.fit["r2"] == pytest.approx(1.0)
    assert profile.step_gap_s == pytest.approx(1e-4)
    assert profile.version == 1 and profile.fit["unknown"] == [
        "decode_context",
        "prefill_self_pairs",
        "prefill_context_pairs",
    ]


def test_noise_costs_precision_not_bias() -> None:
    profile = fit_steps(synthetic_steps(4000, noise=0.2, pads=True))
    assert profile.coefficients["decode_seqs"] == pytest.approx(LAW["decode_seqs"], rel=0.1)
    assert profile.coefficients["held_rows"] == pytest.approx(LAW["held_rows"], rel=0.3)  # few rows, much noise
    assert abs(profile.fit["total_error"]) < 0.01


def test_a_short_or_uniform_trace_says_which_feature(tmp_path: Path) -> None:
    with pytest.raises(EngineInputError, match="need at least 50"):
        fit_steps(synthetic_steps(20))
    steps = synthetic_steps()
    steps.features[:, FEATURE_NAMES.index("decode_seqs")] = 8
    with pytest.raises(EngineInputError, match="feature 'decode_seqs' has no variation"):
        fit_steps(steps)


def test_a_feature_with_two_values_is_fitted() -> None:
    # a continuous engine at low load plans no prefill chunk or one: two values price a chunk
    steps = synthetic_steps()
    chunks = steps.features[:, FEATURE_NAMES.index("prefill_chunks")]
    chunks[:] = np.minimum(chunks, 1)
    steps.duration_s = INTERCEPT + regressors(steps.features, 1) @ np.array([LAW[name] for name in REGRESSORS_V1])
    profile = fit_steps(steps)
    assert profile.coefficients["prefill_chunks"] == pytest.approx(LAW["prefill_chunks"], rel=1e-6)


def test_a_profile_round_trips_and_bad_profiles_are_one_line(tmp_path: Path) -> None:
    profile = fit_steps(synthetic_steps())
    profile.engine = {"kv_bytes_per_token": 8192, "kv_blocks": 100}
    path = tmp_path / "p.json"
    profile.save(path)
    again = load_profile(path)
    f = StepFeatures(100, 1, 7, 3, 1, 5000, 0, 8)
    assert again.step_time(f) == profile.step_time(f)
    assert json.loads(path.read_text())["profile_version"] == 1 and again.unknown_features  # an old profile loads
    assert isinstance(again, FittedCost) and again.engine == profile.engine
    (tmp_path / "bad.json").write_text(json.dumps({"kind": "fitted", "profile_version": 1, "coefficients": {"x": 1}}))
    with pytest.raises(EngineInputError, match="coefficients"):
        load_profile(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(EngineInputError, match="not a batchmark step-time profile"):
        load_profile(tmp_path / "other.json")
