"""How fast a run's steps ran against the fit runs a profile was fitted on, shape by shape.

On a shared machine the same step shapes run faster or slower from one moment to the next (+-8%, one standard
deviation, over 15-30 s on the 2-core machine: docs/measurements/2026-12-07-fidelity-suite-v9.md). A profile prices
its fit runs' average moment; a real run judged against its twin carries its own. So a fit keeps, for each step
shape with enough steps, the fit runs' median measured / priced ratio (`shape_levels`), and a later run's steps of
those shapes are measured against that level:

    speed = sum(measured) / sum(priced x the fit runs' level of its shape) - 1,   over the steps of known shapes

(> 0: the run ran slower than the fit runs did on the same shapes). The price's own bias at a shape cancels, since
both sides are priced alike; what is left is the machine's moment, which no profile can price. Shapes are
pricing_split's (docs/plans/pricing_split.py): decode by rows (decode + held) and keys a row in 256-key bands;
prefill by its rows in powers of two and the decode rows beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engines.step_features import FEATURE_NAMES

MIN_STEPS = 20  # fit-run steps of a shape before their median is that shape's level
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
_DECODE, _HELD, _PREFILL, _PADDED, _CONTEXT = (
    _F[name] for name in ("decode_seqs", "held_rows", "prefill_tokens", "padded_rows", "decode_context")
)


def shape_keys(features: np.ndarray) -> list[str]:
    """Each step's shape (rows of FEATURE_NAMES): `decode:ROWS:BAND` or `prefill:BITS:DECODE_ROWS` (`shape_key`)."""
    return [shape_key(row) for row in features.astype(np.int64).tolist()]


def shape_key(features: Sequence[int]) -> str:
    """One step's shape (a `StepFeatures`, or one row of FEATURE_NAMES), the rule stated once: decode steps by their
    rows (decode + held) and keys a row in 256-key bands (8 and up in one); prefill steps by their prompt rows in
    powers of two (`bit_length`) and the decode rows beside them. The simulated engine checks each step it prices."""
    decode_rows = int(features[_DECODE]) + int(features[_HELD])
    prefill = int(features[_PREFILL])
    if prefill > 0:
        return f"prefill:{(prefill + int(features[_PADDED]) - int(features[_HELD])).bit_length()}:{decode_rows}"
    return f"decode:{decode_rows}:{min(int(features[_CONTEXT]) // max(decode_rows, 1) // 256, 8)}"


def shape_levels(features: np.ndarray, measured: np.ndarray, priced: np.ndarray) -> dict[str, float]:
    """The median measured / priced ratio of each shape with at least MIN_STEPS steps (a step priced at 0 or
    less, which a fit's fixed prices can leave, has no ratio)."""
    priceable = priced > 0
    ratio = np.divide(measured, priced, out=np.full(len(priced), np.nan), where=priceable)
    by_shape: dict[str, list[float]] = {}
    for key, value, ok in zip(shape_keys(features), ratio.tolist(), priceable.tolist(), strict=True):
        if ok:
            by_shape.setdefault(key, []).append(value)
    return {key: float(np.median(v)) for key, v in sorted(by_shape.items()) if len(v) >= MIN_STEPS}


def run_speed(
    features: np.ndarray, measured: np.ndarray, priced: np.ndarray, levels: dict[str, float]
) -> tuple[float | None, float]:
    """(speed, the share of the measured busy time in shapes `levels` knows); speed None when it knows none."""
    level = np.array([levels.get(key, np.nan) for key in shape_keys(features)])
    known = ~np.isnan(level)
    total = float(measured.sum())
    expected = float((priced[known] * level[known]).sum())
    if not known.any() or total <= 0 or expected <= 0:
        return None, 0.0
    covered = float(measured[known].sum())
    return covered / expected - 1.0, covered / total
