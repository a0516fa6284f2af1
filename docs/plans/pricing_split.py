"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): a pair's pricing
error on its real steps, split by where it comes from. Each step falls in a shape bin (rows through the step;
decode: context a row in 256-key bins; prefill: prompt rows in powers of two); for a bin the fit run also has at
least MIN_SHARED steps in, the profile's price minus the measured step splits into
    form:  the fit run's median residual (priced - measured) at that shape   (what the fit leaves off there)
    speed: this step's residual - that median                                 (the shape ran at another speed)
(residuals of one model, so a bin's context mix does not leak between the two) and a step whose shape the fit
run has too few of is "unsampled" (the price extrapolates). Sums over all steps of
all trials, as a share of the measured busy time. Reads files only.

    .venv/bin/python docs/plans/pricing_split.py PROFILE ENGINE FIT_RUN[,FIT_RUN...] RUN [RUN ...]

(several fit runs, comma-separated, pool their steps: a profile fitted on them all, as the fifth suite's.)
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

from engines.sim.fitted import FEATURE_NAMES, FittedCost, load_profile
from engines.sim.shape_speed import shape_keys
from harness.simulation import trace_steps

COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
MIN_SHARED = 20  # fit-run steps of a shape before its median is a measure of that shape


def shape(row: np.ndarray) -> tuple[str, int, int]:
    """A step's shape bin, as `engines.sim.shape_speed.shape_keys` names it (one definition): decode by rows and
    keys a row in 256-key bands, prefill by its rows in powers of two and the decode rows beside it."""
    kind, a, b = shape_keys(np.asarray(row)[None, :])[0].split(":")
    return (kind, int(a), int(b))


def label(key: tuple[str, int, int]) -> str:
    kind, a, b = key
    if kind == "decode":
        return f"decode {a} rows at {256 * b}+ keys a row"
    return f"prefill of {2 ** (a - 1)}+ rows beside {b} decode rows"


def residuals(
    runs: list[Path], engine: str, profile: FittedCost
) -> tuple[list[tuple[str, int, int]], np.ndarray, np.ndarray]:
    """Every traced step's shape, measured duration and residual (priced - measured), over the runs' steps."""
    trace = trace_steps(sorted(p for run in runs for p in (run / "steps").glob(f"{engine}-t*.jsonl")))
    priced = profile.price_steps(trace.features)
    return [shape(r) for r in trace.features], trace.duration_s, priced - trace.duration_s


def main(profile_path: Path, engine: str, fit_runs: list[Path], runs: list[Path]) -> None:
    profile = load_profile(profile_path)
    fit_shapes, _, fit_resid = residuals(fit_runs, engine, profile)
    reference: dict[tuple[str, int, int], float] = {}
    for key in set(fit_shapes):
        resid = fit_resid[[s == key for s in fit_shapes]]
        if len(resid) >= MIN_SHARED:
            reference[key] = float(np.median(resid))
    print("run: measured busy s, priced s, error = form + speed + unsampled (each a share of measured busy time)")
    for run in runs:
        shapes, measured, resid = residuals([run], engine, profile)
        form = speed = unsampled = 0.0
        for key, error in zip(shapes, resid, strict=True):
            if key in reference:
                form += reference[key]
                speed += error - reference[key]
            else:
                unsampled += error
        busy = float(measured.sum())
        priced = measured + resid
        share_unsampled = sum(1 for s in shapes if s not in reference) / len(shapes)
        print(
            f"{run.name}: {busy:.3f} s, priced {priced.sum():.3f} s, error {100 * (priced.sum() / busy - 1):+.1f}%"
            f" = form {100 * form / busy:+.1f}% + speed {100 * speed / busy:+.1f}% + unsampled "
            f"{100 * unsampled / busy:+.1f}% ({100 * share_unsampled:.0f}% of steps)"
        )
        missing = Counter(s for s in shapes if s not in reference).most_common(3)
        fit_counts = Counter(fit_shapes)
        named = [f"{label(key)}: {n} (fit run {fit_counts[key]})" for key, n in missing]
        print("   most steps unsampled: " + ", ".join(named))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], [Path(p) for p in sys.argv[3].split(",")], [Path(p) for p in sys.argv[4:]])
