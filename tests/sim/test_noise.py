"""Replayed noise: blocks span the same stretch of the measured run in every size bin."""

from __future__ import annotations

import numpy as np
import pytest

from engines.sim.noise import BLOCK, StepNoise, step_noise


def two_kinds_of_step(n: int = 60_000, rare_every: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Mostly 2 ms decode steps, every `rare_every`-th a 9 ms prefill, measured on a machine that is 30%
    slower in every third stretch of 4,000 steps (a neighbour's job), with a little wobble of its own."""
    rng = np.random.default_rng(0)
    i = np.arange(n)
    predicted = np.where(i % rare_every == 0, 9e-3, 2e-3)
    slow = np.where((i // 4000) % 3 == 2, 1.3, 1.0)
    return predicted, predicted * slow * rng.lognormal(0.0, 0.02, n)


def test_a_rare_bin_replays_short_blocks_and_a_common_one_long_blocks() -> None:
    predicted, measured = two_kinds_of_step()
    noise = step_noise(predicted, measured)
    assert noise["step_blocks"] == [round(BLOCK * 0.98), round(BLOCK * 0.02)]  # 64 steps of the run in each


def test_a_rare_step_type_draws_its_median_steadily() -> None:
    # 200 prefills in a simulated run: with blocks of 64 of the rare bin's values they came from ~3 blocks, and
    # their median moved with the seed; blocks scaled to the bin draw ~200 values from all over the trace
    predicted, measured = two_kinds_of_step()
    noise = step_noise(predicted, measured)
    old = {k: v for k, v in noise.items() if k != "step_blocks"}  # a profile written before the blocks scaled

    def spread(profile: dict) -> float:
        medians = []
        for seed in range(12):
            draw = StepNoise.from_profile(profile, seed)
            assert draw is not None
            medians.append(np.median([draw(9e-3) for _ in range(200)]))
        return float(np.ptp(medians) / np.median(medians))

    assert StepNoise.from_profile(old, 0) is not None  # still loads, with the old blocks
    assert spread(noise) < 0.5 * spread(old)
    assert spread(noise) < 0.1


def test_the_same_seed_draws_the_same_values() -> None:
    predicted, measured = two_kinds_of_step()
    noise = step_noise(predicted, measured)
    a, b = StepNoise.from_profile(noise, 7), StepNoise.from_profile(noise, 7)
    assert a is not None and b is not None
    assert [a(x) for x in predicted[:500]] == pytest.approx([b(x) for x in predicted[:500]])
