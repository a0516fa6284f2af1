"""Replayed noise keeps each step class's level within a size bin (engines/sim/noise.py's docstring)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.errors import EngineInputError
from engines.sim.fitted import FittedCost, TraceSteps, fit_steps, load_profile
from engines.sim.noise import STEP_CLASSES, StepNoise, step_class, step_noise
from engines.step_features import StepFeatures

ONE_ROW, TWO_ROWS = StepFeatures(decode_seqs=1), StepFeatures(decode_seqs=2)


def one_bin_two_shapes(n: int = 20_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every step priced 2.5 ms (one size bin); 1-row decode steps measure 0.9x that, 2-row ones 1.2x (the
    sixth suite's fit runs: 0.92x and 1.09x at 2.3 and 2.7 ms), with a little wobble."""
    rng = np.random.default_rng(0)
    rows = np.where(np.arange(n) % 4 == 0, 2, 1)
    predicted = np.full(n, 2.5e-3)
    measured = predicted * np.where(rows == 2, 1.2, 0.9) * rng.lognormal(0.0, 0.02, n)
    classes = np.array([step_class(0, r) for r in rows])
    return predicted, measured, classes


def draws(noise: dict, features: StepFeatures, seed: int = 3, n: int = 4000) -> np.ndarray:
    draw = StepNoise.from_profile(noise, seed)
    assert draw is not None
    return np.array([draw(2.5e-3, features) for _ in range(n)]) / 2.5e-3


def test_a_shape_sharing_a_bin_replays_its_own_level() -> None:
    predicted, measured, classes = one_bin_two_shapes()
    noise = step_noise(predicted, measured, classes)
    for features, level in ((TWO_ROWS, 1.2), (ONE_ROW, 0.9)):
        ratios = draws(noise, features)
        assert np.mean(ratios) == pytest.approx(level, rel=0.02)
        # its own wobble (2%), not the other shape's level drawn and scaled (1.2 / 0.975 x 0.9 or x 1.2)
        assert np.std(ratios) / np.mean(ratios) < 0.05


def test_a_profile_without_class_factors_draws_as_before() -> None:
    predicted, measured, _ = one_bin_two_shapes()
    old = step_noise(predicted, measured)
    assert "step_class_factors" not in old
    a, b = StepNoise.from_profile(old, 5), StepNoise.from_profile(old, 5)
    assert a is not None and b is not None
    assert [a(2.5e-3, TWO_ROWS) for _ in range(300)] == [b(2.5e-3) for _ in range(300)]


def fitted_profile() -> FittedCost:
    """A profile fitted on `one_bin_two_shapes`'s steps (decode only, contexts varied so the form can fit)."""
    _, measured, classes = one_bin_two_shapes()
    rows = np.where(classes == step_class(0, 2), 2, 1)
    features = np.zeros((len(rows), len(StepFeatures._fields)), dtype=np.int64)
    features[:, StepFeatures._fields.index("decode_seqs")] = rows
    features[:, StepFeatures._fields.index("decode_context")] = rows * np.arange(len(rows)) % 700
    return fit_steps(TraceSteps(features, measured, np.full(len(rows) - 1, 1e-4), ["synthetic"]), version=2)


def test_a_fit_writes_the_class_factors() -> None:
    profile = fitted_profile()
    bins = sum(1 for k in profile.noise if k.startswith("step_ratio_"))
    assert len(profile.noise["step_class_factors"]) == bins * STEP_CLASSES
    assert StepNoise.from_profile(profile.noise, 1) is not None


@pytest.mark.parametrize("last", [None, -1.0, "x", True])
def test_a_profile_with_bad_class_factors_is_one_line(tmp_path: Path, last: object) -> None:
    path = tmp_path / "profile.json"
    fitted_profile().save(path)
    data = json.loads(path.read_text())
    factors = data["noise"]["step_class_factors"]
    if last is None:
        factors.pop()  # one short
    else:
        factors[-1] = last
    path.write_text(json.dumps(data))
    with pytest.raises(EngineInputError, match=r"profile.json: field 'noise.step_class_factors' must hold"):
        load_profile(path)
