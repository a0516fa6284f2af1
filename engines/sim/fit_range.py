"""Where a fitted profile extrapolates: the range of each regressor it was fitted on, and a cost model that
counts the simulated steps falling outside it.

A linear fit is only measured inside the span of its steps: priced beyond it (a 512-token chunk from a
fit on 64-token prompts, a held slot never seen) the step time is an extrapolation, and the simulated
result inherits its error unseen. The profile records, per regressor, the smallest non-zero and the
largest value over its steps (`fitted.fitted_ranges`, in `fit["ranges"]`); `RangeWatch` wraps the profile,
prices every step with it unchanged, and counts per regressor the steps above the fitted maximum, and
how far above. Only the maximum is checked: below the smallest value the intercept, fitted on every
step, carries the step (a decode-only step has no prefill tokens at all). A profile written before the
ranges were recorded says so ("range unknown") rather than passing as inside.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engines.sim.fitted import FittedCost, read_ranges
from engines.step_features import StepFeatures

# how the warning names each regressor
LABELS = {
    "prefill_tokens": "prefill tokens per step",
    "prefill_chunks": "prefill chunks per step",
    "decode_seqs": "decode rows per step",
    "attended_context": "attended (row, key) pairs per step",
    "prompt_pad_rows": "prompt pad rows per step",
    "held_rows": "held static slots per step",
    "decode_context": "keys read by decode rows per step",
    "decode_context_to_256": "decode keys up to 256 a row per step",
    "decode_context_256_1024": "decode keys 256..1,024 a row per step",
    "decode_context_past_1024": "decode keys past 1,024 a row per step",
    "prefill_self_pairs": "prefill (row, key) pairs within chunks per step",
    "prefill_context_pairs": "prefill rows x earlier context per step",
}


class RangeWatch:
    """`profile` as a cost model, counting the steps it prices beyond the range it was fitted on."""

    kind = "fitted"

    def __init__(self, profile: FittedCost) -> None:
        self.profile = profile
        self.names = profile.regressors
        self.ranges = read_ranges(profile.fit, self.names)
        self._max = None if self.ranges is None else tuple(self.ranges[name][1] for name in self.names)
        self.steps = 0
        self._outside = [0] * len(self.names)
        self._largest = [0.0] * len(self.names)

    def step_time(self, f: StepFeatures) -> float:
        self.steps += 1
        top = self._max
        if top is not None:
            values = self.profile.regressor_values(f)
            if any(value > high for value, high in zip(values, top, strict=True)):
                self._count(values)
        return self.profile.step_time(f)

    def quote(self, f: StepFeatures) -> float:
        """The price of a step that is only forecast (admission control's), not counted as one priced."""
        return self.profile.step_time(f)

    def _count(self, values: tuple[int, ...]) -> None:
        for i, (value, high) in enumerate(zip(values, self._max or (), strict=True)):
            if value > high:
                self._outside[i] += 1
                self._largest[i] = max(self._largest[i], value)

    def range_check(self) -> dict[str, Any]:
        """What the manifest carries: the steps priced, the fitted ranges (None: unknown), and per regressor
        with any step outside: how many, their share, the largest value and its ratio to the fitted maximum."""
        return pooled_check([self])

    def describe(self) -> dict[str, Any]:
        return {**self.profile.describe(), "range_check": self.range_check()}


def pooled_check(watches: Sequence[RangeWatch]) -> dict[str, Any]:
    """The range check of several engines on one profile (a cluster's replicas) as one: their steps together."""
    ranges = watches[0].ranges
    steps = sum(w.steps for w in watches)
    outside = {}
    for i, name in enumerate(watches[0].names):
        count = sum(w._outside[i] for w in watches)
        if count:
            top = ranges[name][1] if ranges else 0.0
            largest = max(w._largest[i] for w in watches)
            outside[name] = {
                "steps": count,
                "share": count / steps,
                "largest": largest,
                "ratio": largest / top if top else None,
            }
    fitted = None if ranges is None else {k: list(v) for k, v in ranges.items()}
    return {"steps": steps, "fitted": fitted, "outside": outside}


def pooled_description(first: dict[str, Any], costs: Sequence[object]) -> dict[str, Any]:
    """`first` (one replica's description) with the range check of every replica on `first`'s profile pooled, so
    a cluster's warning counts all its steps, not its first replica's."""
    watches = [c for c in costs if isinstance(c, RangeWatch)]
    check = (first.get("cost_model") or {}).get("range_check")
    if check is not None and len(watches) > 1:
        first["cost_model"] = {**first["cost_model"], "range_check": pooled_check(watches)}
    return first
