"""Measured noise, replayed: a fitted profile keeps what its model did not explain, and the simulator
draws it back, so a simulated run varies as the measured one did (tails included).

Two series are kept from the fitted trace, in step order: each step's measured / predicted duration,
and each back-to-back gap between steps. The simulator replays them in blocks of consecutive values
from seeded random offsets (a block bootstrap): a slow stretch of the measured machine (another
process on the cores, a garbage collection) stays a stretch, instead of being spread thin over the
run. The same seed draws the same values, so identical seeds still give identical metrics.
"""

from __future__ import annotations

import numpy as np

BLOCK = 64
KEEP = 8192  # values kept in a profile (evenly spaced blocks of a longer trace)


class BlockResampler:
    """Consecutive values from random offsets, `block` at a time."""

    def __init__(self, values: list[float], seed: int, block: int = BLOCK) -> None:
        if not values:
            raise ValueError("nothing to resample")
        self._values = [float(v) for v in values]
        self._block = max(1, min(block, len(values)))
        self._rng = np.random.default_rng(seed)
        self._pos = 0
        self._left = 0

    def __call__(self) -> float:
        if not self._left:
            self._pos = int(self._rng.integers(0, len(self._values) - self._block + 1))
            self._left = self._block
        value = self._values[self._pos]
        self._pos += 1
        self._left -= 1
        return value


def keep_blocks(values: np.ndarray, keep: int = KEEP, block: int = BLOCK) -> list[float]:
    """At most `keep` values of a series, as evenly spaced runs of `block` consecutive ones."""
    if values.size <= keep:
        return values.tolist()
    starts = np.linspace(0, values.size - block, keep // block).astype(np.int64)
    return np.concatenate([values[s : s + block] for s in starts]).tolist()
