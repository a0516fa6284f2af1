"""Measured noise, replayed: a fitted profile keeps what its model did not explain, and the simulator
draws it back, so a simulated run varies as the measured one did (tails included).

Kept from the fitted trace, in step order: each step's measured / predicted duration, filed by the
size of the prediction (log-spaced bins: a 2 ms decode step and a 2 s padded prefill do not wobble
alike), and each back-to-back gap between steps. The simulator multiplies each predicted step by a
ratio drawn from its size's bin and replays the gaps, in blocks of consecutive values from seeded
random offsets (a block bootstrap): a slow stretch of the measured machine (another process on the
cores, a garbage collection) stays a stretch instead of being spread thin over the run. The same seed
draws the same values, so identical seeds give identical metrics.

A block spans about the same stretch of the measured run in every bin: `BLOCK` steps of the whole trace,
so a bin holding a share s of the steps replays blocks of s x `BLOCK` of its values. A rare bin's values
lie far apart in time, and 64 of them in a row were no stretch of the machine: a simulated run then drew
only a few blocks for its rare steps (the prefills that set TTFT), and its median TTFT followed two or
three random draws (measured: 8.4-10.4 ms over 5 seeds, one profile, one schedule; 9.2-9.9 ms with blocks
scaled to the bin).

Steps of different shapes can share a size bin and yet sit at different levels against the price: on the sixth
suite's fit runs a 2-row decode step (priced 2.7 ms) measured 1.09x its price and a 3-row one 1.19x, while the
1-row steps that fill the same bin measured 0.92x (docs/measurements/2026-12-07-fidelity-v6-cells.md). Drawn
from the bin alone, every such step replayed the 1-row steps' level. So within a bin each step class (a step
with prefill; decode rows 1, 2-3, 4-7, 8-15, 16+) keeps its own level: a class with enough steps in the bin has
its values divided by its factor (its mean ratio over the bin's) before they are kept, and a step of that class
is multiplied by it when replayed. A class too rare in a bin, and a profile written before the factors, use
factor 1: the bin's values as they are.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from engines.step_features import FEATURE_NAMES

BLOCK = 64
KEEP = 4096  # values kept per series (evenly spaced blocks of a longer one)
BINS_PER_DECADE = 2
MIN_PER_BIN = 32  # a bin with fewer steps joins its neighbour
STEP_CLASSES = 6  # a step with prefill; then decode rows 1, 2-3, 4-7, 8-15, 16+ (`step_class`)
_PREFILL_TOKENS, _DECODE_SEQS, _HELD_ROWS = (
    FEATURE_NAMES.index(n) for n in ("prefill_tokens", "decode_seqs", "held_rows")
)
STEP_STREAM, GAP_STREAM = 1, 2  # seed-sequence tags: the draws of one series never depend on the other's


class BlockResampler:
    """Consecutive values from random offsets, `block` at a time."""

    def __init__(self, values: list[float], seed: int | list[int], block: int = BLOCK) -> None:
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


def step_class(prefill_tokens: int, decode_rows: int) -> int:
    """A step's class for its noise level: 0 with any prefill, else its decode rows in powers of two."""
    return 0 if prefill_tokens else min(int(decode_rows).bit_length(), STEP_CLASSES - 1)


class StepNoise:
    """predicted step time -> a noisy one: times a ratio replayed from the bin of its size, times its class's
    factor in that bin (given the step's features: prefill tokens, chunks, decode rows, pad rows, held rows)."""

    def __init__(
        self,
        edges: list[float],
        ratios: list[list[float]],
        seed: int,
        blocks: list[int] | None = None,
        factors: list[float] | None = None,
    ) -> None:
        self._edges = edges  # upper bounds of all bins but the last, seconds
        blocks = blocks or [BLOCK] * len(ratios)  # a profile written before blocks were scaled to their bin
        self._bins = [
            BlockResampler(r, [seed, STEP_STREAM, i], int(n))
            for i, (r, n) in enumerate(zip(ratios, blocks, strict=True))
        ]
        self._factors = factors  # per bin, STEP_CLASSES factors in a row (none: a profile written before them)

    def __call__(self, predicted: float, features: Sequence[int] | None = None) -> float:
        b = bisect.bisect_right(self._edges, predicted)
        ratio = self._bins[b]()
        if self._factors is not None and features is not None:
            rows = features[_DECODE_SEQS] + features[_HELD_ROWS]
            ratio *= self._factors[b * STEP_CLASSES + step_class(features[_PREFILL_TOKENS], rows)]
        return predicted * ratio

    @classmethod
    def from_profile(cls, noise: dict, seed: int) -> StepNoise | None:
        ratios = [noise[k] for k in sorted((k for k in noise if k.startswith("step_ratio_")), key=_bin_index)]
        if not ratios or not all(ratios):
            return None
        factors = noise.get("step_class_factors")
        if factors is not None and len(factors) != len(ratios) * STEP_CLASSES:
            raise ValueError(f"step_class_factors: {len(factors)} values, expected {len(ratios) * STEP_CLASSES}")
        return cls(list(noise.get("step_bin_edges_s") or []), ratios, seed, noise.get("step_blocks"), factors)


def _bin_index(key: str) -> int:
    return int(key.rsplit("_", 1)[1])


def step_noise(
    predicted: np.ndarray, measured: np.ndarray, classes: np.ndarray | None = None
) -> dict[str, list[float]]:
    """The ratio series of a trace, binned by prediction (for `StepNoise`), in step order within a bin; with each
    step's class (`step_class`), each class's factor per bin and the values divided by it."""
    ratio = measured / np.maximum(predicted, 1e-9)
    logs = np.log10(np.maximum(predicted, 1e-9))
    lo, hi = math.floor(logs.min() * BINS_PER_DECADE), math.ceil(logs.max() * BINS_PER_DECADE)
    edges = [10 ** (k / BINS_PER_DECADE) for k in range(lo + 1, hi)]
    index = np.searchsorted(edges, predicted, side="right")
    while len(edges) and (counts := np.bincount(index, minlength=len(edges) + 1)).min() < MIN_PER_BIN:
        small = int(counts.argmin())
        drop = small - 1 if small == len(edges) else small  # merge into the next bin (the last: the previous)
        edges.pop(drop)
        index = np.searchsorted(edges, predicted, side="right")
    counts = np.bincount(index, minlength=len(edges) + 1)
    blocks = [max(1, round(BLOCK * int(n) / ratio.size)) for n in counts]
    out: dict[str, list[float]] = {"step_bin_edges_s": edges, "step_blocks": blocks}  # type: ignore[dict-item]
    if classes is not None:
        factors = np.ones((len(edges) + 1, STEP_CLASSES))
        ratio = ratio.copy()
        for b in range(len(edges) + 1):
            in_bin = index == b
            for c in range(STEP_CLASSES):
                pick = in_bin & (classes == c)
                if pick.sum() >= MIN_PER_BIN:
                    factors[b, c] = ratio[pick].mean() / ratio[in_bin].mean()
            ratio[in_bin] /= factors[b, classes[in_bin]]
        out["step_class_factors"] = factors.ravel().tolist()
    for b in range(len(edges) + 1):
        out[f"step_ratio_{b}"] = keep_blocks(ratio[index == b], block=blocks[b])
    return out


def keep_blocks(values: np.ndarray, keep: int = KEEP, block: int = BLOCK) -> list[float]:
    """At most `keep` values of a series, as evenly spaced runs of `block` consecutive ones."""
    if values.size <= keep:
        return values.tolist()
    starts = np.linspace(0, values.size - block, keep // block).astype(np.int64)
    return np.concatenate([values[s : s + block] for s in starts]).tolist()
