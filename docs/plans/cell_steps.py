"""Issue 30: the step shapes inside some requests' metric interval (docs/measurements/2026-12-07-fidelity-v6-cells.md).

For the given requests of a real run, every step of every trial inside the request's TTFT, TPOT or E2E interval,
grouped by shape (docs/plans/pricing_split.py's bins), then per shape: steps, measured time, the profile's
noise-free price, and the pooled fit runs' steps of that shape with their median measured / priced ratio. Reads
files only.

    .venv/bin/python docs/plans/cell_steps.py METRIC PROFILE FIT_RUN[,FIT_RUN...] RUN REQUEST_ID [REQUEST_ID ...]
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from docs.plans.cell_split import interval, records, steps
from docs.plans.pricing_split import label, residuals, shape
from engines.sim.fitted import load_profile
from harness.simulation import trace_steps


def main(metric: str, profile_path: Path, fit_runs: list[Path], run: Path, ids: list[str]) -> None:
    profile = load_profile(profile_path)
    fit_shapes, fit_measured, fit_resid = residuals(fit_runs, "continuous", profile)
    fit: dict[tuple[str, int, int], list[float]] = defaultdict(list)
    for key, m, r in zip(fit_shapes, fit_measured, fit_resid, strict=True):
        fit[key].append(m / (m + r))
    real = records(run, "continuous")
    by_shape: dict[tuple[str, int, int], list[tuple[float, float]]] = defaultdict(list)
    for t, trial in real.items():
        path = run / "steps" / f"continuous-t{t}.jsonl"
        rows, price = steps(path, profile)
        features = trace_steps([path]).features
        for i in ids:
            start, end = interval(trial[i], metric)
            for row, p, f in zip(rows, price, features, strict=True):
                if row["t_end"] > start and row["t_start"] < end:
                    by_shape[shape(f)].append((row["t_end"] - row["t_start"], float(p)))
    print(
        f"{run.name}, {metric} of {' '.join(ids)}, steps of all trials (ms): shape: steps, measured, priced "
        "(priced / measured) | fit runs: steps, median measured / priced"
    )
    total = [0.0, 0.0]
    for key, xs in sorted(by_shape.items(), key=lambda kv: -sum(p for _, p in kv[1])):
        m, p = (float(sum(x[k] for x in xs)) for k in (0, 1))
        total = [total[0] + m, total[1] + p]
        ratio = f"{np.median(fit[key]):.3f}" if fit.get(key) else "-"
        print(
            f"  {label(key)}: {len(xs)}, {1e3 * m:.1f}, {1e3 * p:.1f} ({p / m:.3f}) | {len(fit.get(key, []))}, {ratio}"
        )
    print(f"  all: {1e3 * total[0]:.1f}, {1e3 * total[1]:.1f} ({total[1] / total[0]:.3f})")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], Path(a[1]), [Path(p) for p in a[2].split(",")], Path(a[3]), a[4:])
