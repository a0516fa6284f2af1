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

from typing import Any

from engines.sim.fitted import REGRESSORS, FittedCost, read_ranges
from engines.step_features import StepFeatures

# how the warning names each regressor
LABELS = {
    "prefill_tokens": "prefill tokens per step",
    "prefill_chunks": "prefill chunks per step",
    "decode_seqs": "decode rows per step",
    "attended_context": "attended (row, key) pairs per step",
    "prompt_pad_rows": "prompt pad rows per step",
    "held_rows": "held static slots per step",
}


class RangeWatch:
    """`profile` as a cost model, counting the steps it prices beyond the range it was fitted on."""

    kind = "fitted"

    def __init__(self, profile: FittedCost) -> None:
        self.profile = profile
        self.ranges = read_ranges(profile.fit)
        self._max = None if self.ranges is None else tuple(self.ranges[name][1] for name in REGRESSORS)
        self.steps = 0
        self._outside = [0] * len(REGRESSORS)
        self._largest = [0.0] * len(REGRESSORS)

    def step_time(self, f: StepFeatures) -> float:
        self.steps += 1
        if self._max is not None:
            prefill, chunks, decode, pad, held, attended = f[:6]
            values = (prefill, chunks, decode, attended, pad - held, held)  # REGRESSORS' order
            for i, (value, top) in enumerate(zip(values, self._max, strict=True)):
                if value > top:
                    self._outside[i] += 1
                    self._largest[i] = max(self._largest[i], value)
        return self.profile.step_time(f)

    def range_check(self) -> dict[str, Any]:
        """What the manifest carries: the steps priced, the fitted ranges (None: unknown), and per regressor
        with any step outside: how many, their share, the largest value and its ratio to the fitted maximum."""
        outside = {}
        for i, name in enumerate(REGRESSORS):
            if self._outside[i]:
                top = self.ranges[name][1] if self.ranges else 0.0
                count, largest = self._outside[i], self._largest[i]
                outside[name] = {"steps": count, "share": count / self.steps, "largest": largest,
                                 "ratio": largest / top if top else None}  # fmt: skip
        fitted = None if self.ranges is None else {k: list(v) for k, v in self.ranges.items()}
        return {"steps": self.steps, "fitted": fitted, "outside": outside}

    def describe(self) -> dict[str, Any]:
        return {**self.profile.describe(), "range_check": self.range_check()}
