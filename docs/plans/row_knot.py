"""Issue 30: what a bend in the decode rows' price would change (docs/measurements/2026-12-07-fidelity-v6-cells.md).

The version-3 form prices every decode row alike (`decode_seqs`). On the fit runs, decode steps of 2 to 9 rows at
short context measure 12-25% above that price and 1-row steps 7% below it. This refits the pooled fit runs by
the same non-negative least squares with one more regressor, min(rows, KNOT) (the first KNOT rows' extra price),
prints both forms' mean measured / priced ratio per row count on the fit runs and on each run, and re-times each
run's real schedules (docs/plans/cell_split.py's `retime`) at both forms' noise-free prices for one cell. A
counterfactual on files only: no engine or profile changes.

    .venv/bin/python docs/plans/row_knot.py KNOT FIT_RUN[,FIT_RUN...] METRIC PERCENTILE RUN [RUN ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from docs.plans.cell_split import percentile, records, retime, value
from docs.plans.pricing_split import COLUMN
from engines.sim.fitted import regressors
from harness.simulation import trace_steps


def design(features: np.ndarray, knot: int) -> tuple[np.ndarray, np.ndarray]:
    """The version-3 columns with an intercept, and the same with min(rows, knot) added."""
    x = np.column_stack([np.ones(len(features)), regressors(features, 3)])
    rows = features[:, COLUMN["decode_seqs"]] + features[:, COLUMN["held_rows"]]
    return x, np.column_stack([x, np.minimum(rows, knot)])


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    scale = np.maximum(np.abs(x).max(axis=0), 1e-12)
    solution, _ = nnls(x / scale, y)
    return solution / scale


def by_rows(features: np.ndarray, measured: np.ndarray, priced: np.ndarray) -> str:
    rows = features[:, COLUMN["decode_seqs"]] + features[:, COLUMN["held_rows"]]
    decode = (features[:, COLUMN["prefill_tokens"]] == 0) & (rows > 0)
    out = []
    for k in (1, 2, 3, 4, 6, 8, 12, 16, 32):
        lo = {1: 1, 2: 2, 3: 3, 4: 4, 6: 5, 8: 7, 12: 9, 16: 13, 32: 17}[k]
        pick = decode & (rows >= lo) & (rows <= k)
        if pick.any():
            out.append(f"{lo}-{k}: {np.mean(measured[pick] / priced[pick]):.3f} ({int(pick.sum())})")
    return "; ".join(out).replace("1-1:", "1:").replace("2-2:", "2:").replace("3-3:", "3:").replace("4-4:", "4:")


def main(knot: int, fit_runs: list[Path], metric: str, q: float, runs: list[Path]) -> None:
    paths = sorted(p for run in fit_runs for p in (run / "steps").glob("continuous-t*.jsonl"))
    trace = trace_steps(paths)
    x3, xk = design(trace.features, knot)
    c3, ck = fit(x3, trace.duration_s), fit(xk, trace.duration_s)
    print(
        f"pooled fit runs, {len(trace.duration_s)} steps: version 3 intercept {1e6 * c3[0]:.0f} us, decode row "
        f"{1e6 * c3[1 + 2]:.0f} us; with min(rows, {knot}): intercept {1e6 * ck[0]:.0f} us, decode row "
        f"{1e6 * ck[1 + 2]:.0f} us, first {knot} rows +{1e6 * ck[-1]:.0f} us each; busy priced "
        f"{(x3 @ c3).sum() / trace.duration_s.sum() - 1:+.1%} / {(xk @ ck).sum() / trace.duration_s.sum() - 1:+.1%}"
    )
    print("decode-only steps, mean measured / priced (steps) by rows, version 3 then with the knot:")
    print(f"  fit runs: {by_rows(trace.features, trace.duration_s, x3 @ c3)}")
    print(f"            {by_rows(trace.features, trace.duration_s, xk @ ck)}")
    for run in runs:
        real = records(run, "continuous")
        cells: dict[str, list[float]] = {"measured": [], "version 3": [], "knot": []}
        for t, trial in real.items():
            path = run / "steps" / f"continuous-t{t}.jsonl"
            rows = [json.loads(line) for line in path.open()]
            steps = trace_steps([path])
            a, b = design(steps.features, knot)
            if t == min(real):
                print(f"  {run.name}: {by_rows(steps.features, steps.duration_s, a @ c3)}")
                print(f"  {' ' * len(run.name)}  {by_rows(steps.features, steps.duration_s, b @ ck)}")
            for name, durations in (("measured", steps.duration_s), ("version 3", a @ c3), ("knot", b @ ck)):
                new = retime(rows, durations, None)
                cells[name].append(
                    percentile([value(r, metric, [new[x] for x in r["token_times"]]) for r in trial.values()], q)
                )
        base = statistics.median(cells["measured"])
        print(
            f"  {run.name} {metric} p{q:g}, real schedules re-timed at the noise-free price: measured "
            f"{1e3 * base:.2f} ms, version 3 {statistics.median(cells['version 3']) / base - 1:+.1%}, "
            f"with the knot {statistics.median(cells['knot']) / base - 1:+.1%}"
        )


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]), [Path(p) for p in a[1].split(",")], a[2], float(a[3]), [Path(p) for p in a[4:]])
