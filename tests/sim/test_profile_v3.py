"""Profile version 3 (issue 30): the decode keys priced piecewise in context at knots fixed in advance (256 and
1,024 keys a row: the embedded model's cache against this machine's L2). A fit on steps timed by a bent law
recovers each segment's price; the simulator prices a step exactly as the fit's columns do; profiles of version 2
load and price as they did (the suites' committed profiles among them)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.errors import EngineInputError
from engines.plan import Chunk, StepPlan
from engines.sim.fitted import (
    DECODE_KNOTS,
    PROFILE_VERSION,
    REGRESSORS,
    SEGMENTS,
    FittedCost,
    TraceSteps,
    decode_segments,
    fit_steps,
    load_profile,
    regressors,
)
from engines.step_features import step_features
from tests.sim.test_fit_features import seq

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# a law bent at the knots: the price of a key rises past each
LAW = {
    "prefill_tokens": 40e-6,
    "prefill_chunks": 300e-6,
    "decode_seqs": 150e-6,
    "prompt_pad_rows": 40e-6,
    "held_rows": 150e-6,
    "prefill_self_pairs": 60e-9,
    "prefill_context_pairs": 90e-9,
    "decode_context_to_256": 100e-9,
    "decode_context_256_1024": 300e-9,
    "decode_context_past_1024": 700e-9,
}
INTERCEPT = 1.5e-3


def plans(n: int = 500, seed: int = 0) -> list[StepPlan]:
    """Single-sequence and small-batch decode at contexts 16..4,096, held slots, now and then a prefill chunk."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ctx = int(rng.integers(16, 4096))
        chunks = [Chunk(seq(ctx + int(rng.integers(0, 64)), 1), 1, True) for _ in range(int(rng.integers(1, 4)))]
        if rng.random() < 0.2:
            chunks.append(Chunk(seq(int(rng.integers(16, 2048)), 3), 0, False, num_pad=1))
        if rng.random() < 0.3:
            chunks.append(
                Chunk(seq(int(rng.integers(0, 1024)) if rng.random() < 0.5 else 0), int(rng.integers(1, 513)), True)
            )
        out.append(StepPlan(chunks))
    return out


def timed(steps: list[StepPlan]) -> TraceSteps:
    x = np.array([step_features(plan) for plan in steps], dtype=np.int64)
    durations = INTERCEPT + regressors(x, 3) @ np.array([LAW[name] for name in REGRESSORS])
    return TraceSteps(x, durations, np.full(len(steps) - 1, 1e-4), ["synthetic"])


def test_the_segments_split_the_keys_at_the_knots() -> None:
    assert DECODE_KNOTS == (256, 1024) and PROFILE_VERSION == 3
    assert decode_segments(100, 1) == (100, 0, 0)
    assert decode_segments(700, 1) == (256, 444, 0)
    assert decode_segments(3000, 1) == (256, 768, 1976)
    assert decode_segments(2 * 3000, 2) == (512, 1536, 3952)  # two rows at mean context 3,000
    assert sum(decode_segments(12345, 7)) == 12345


def test_a_fit_recovers_a_law_bent_at_the_knots() -> None:
    profile = fit_steps(timed(plans()))
    assert profile.version == 3 and profile.intercept_s == pytest.approx(INTERCEPT, rel=1e-6)
    for name in ("decode_seqs", "held_rows", *SEGMENTS, "prefill_self_pairs"):
        assert profile.coefficients[name] == pytest.approx(LAW[name], rel=1e-6), name
    # and the version-2 form, one line in context, cannot: its residual is the bend
    line = fit_steps(timed(plans()), version=2)
    assert line.version == 2 and line.fit["rmse_s"] > 1e3 * profile.fit["rmse_s"]


def test_the_simulator_prices_a_step_as_the_fit_s_columns_do(tmp_path: Path) -> None:
    steps = timed(plans(200, seed=3))
    profile = fit_steps(steps)
    profile.save(tmp_path / "p.json")
    loaded = load_profile(tmp_path / "p.json")
    assert loaded.version == 3 and loaded.coefficients == profile.coefficients
    columns = regressors(steps.features, 3) @ np.array([profile.coefficients[n] for n in REGRESSORS])
    assert loaded.price_steps(steps.features) == pytest.approx(columns + profile.intercept_s, rel=1e-12)
    for f, want in zip(steps.features.tolist(), columns + profile.intercept_s, strict=True):
        features = step_features(StepPlan([]))._make(f)
        assert loaded.step_time(features) == pytest.approx(want, rel=1e-9)
        assert loaded.regressor_values(features) == pytest.approx(regressors(np.array([f]), 3)[0])


def test_version_2_profiles_price_as_they_did() -> None:
    """The suites' committed version-2 profiles: one price per key, whatever the context (their tables are
    reproduced by tests/fidelity_suite; here each step's price is the version-2 formula itself)."""
    rng = np.random.default_rng(5)
    paths = sorted(
        p for suite in ("fidelity_suite", "fidelity_suite_v2") for p in FIXTURES.glob(f"{suite}/runs/profile-*.json")
    )
    assert len(paths) == 4
    for path in paths:
        data = json.loads(path.read_text())
        profile = load_profile(path)
        assert profile.version == 2 and "decode_context" in profile.coefficients
        c = data["coefficients"]
        for plan in plans(50, seed=int(rng.integers(1000))):
            f = step_features(plan)
            want = (
                data["intercept_s"]
                + c["prefill_tokens"] * f.prefill_tokens
                + c["prefill_chunks"] * f.prefill_chunks
                + c["decode_seqs"] * f.decode_seqs
                + c["prompt_pad_rows"] * (f.padded_rows - f.held_rows)
                + c["held_rows"] * f.held_rows
                + c["decode_context"] * f.decode_context
                + c["prefill_self_pairs"] * f.prefill_self_pairs
                + c["prefill_context_pairs"] * f.prefill_context_pairs
            )
            assert profile.step_time(f) == pytest.approx(want, rel=1e-12), path


def test_a_trace_that_cannot_split_the_keys_fits_version_2_and_says_so() -> None:
    """Wide batches only, every row past 256 keys: the first segment is 256 x the rows, no price of its own."""
    rng = np.random.default_rng(1)
    wide = [
        StepPlan(
            [Chunk(seq(int(rng.integers(300, 4096)), 1), 1, True) for _ in range(int(rng.integers(8, 33)))]
            + ([Chunk(seq(0), int(rng.integers(8, 512)), True)] if rng.random() < 0.3 else [])
        )
        for _ in range(300)
    ]
    profile = fit_steps(timed(wide))
    assert profile.version == 2 and "linearly dependent in the version-3 form" in profile.fit["form"]
    with pytest.raises(EngineInputError, match="linearly dependent"):
        fit_steps(timed(wide), version=3)


def test_a_price_of_another_form_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not regressors of profile version 3"):
        FittedCost(0.0, {"decode_context": 1e-9}, version=3)
    data = fit_steps(timed(plans(100))).to_json()
    data["coefficients"]["decode_context"] = 1e-9
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(EngineInputError, match="coefficients"):
        load_profile(tmp_path / "bad.json")
