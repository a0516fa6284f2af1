"""Issue 30's fifth fidelity suite: how far one fit workload's step speed moved across a measurement session.
Given several fit runs of the same workload (same args, run at different times of the session), per ENGINE:

- per run, the median measured single-row decode step per 256-key context bin, and a speed index: over the step
  shapes (pricing_split.py's bins) that every run holds MIN_SHARED steps of, the run's median step per shape
  weighted by the pooled count of that shape, as a share of the same sum at the pooled medians;
- the profile fitted on each run alone and on all of them pooled (`fit_run`, the default form): its main prices
  and the busy time it gives the pooled steps, against their measured busy time.

Reads files only; the fits are in memory.

    .venv/bin/python docs/plans/fit_run_spread.py ENGINE FIT_RUN [FIT_RUN ...]
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

from engines.sim.fitted import FittedCost, regressors
from harness.simulation import TraceSteps, fit_run, trace_steps

sys.path.insert(0, str(Path(__file__).parent))
from pricing_split import COLUMN, MIN_SHARED, shape  # a script beside this one: one shape rule

PRICES = ("prefill_tokens", "decode_seqs", "decode_context_to_256", "decode_context_256_1024")


def steps(runs: list[Path], engine: str) -> TraceSteps:
    return trace_steps(sorted(p for r in runs for p in (r / "steps").glob(f"{engine}-t*.jsonl")))


def priced(profile: FittedCost, trace: TraceSteps) -> float:
    coef = np.array([profile.coefficients.get(n, 0.0) for n in profile.regressors])
    return float((profile.intercept_s + regressors(trace.features, profile.version) @ coef).sum())


def single_row_decode_ms(trace: TraceSteps) -> list[str]:
    f = trace.features
    one = (f[:, COLUMN["prefill_tokens"]] == 0) & (f[:, COLUMN["decode_seqs"]] == 1) & (f[:, COLUMN["held_rows"]] == 0)
    keys = np.minimum(f[:, COLUMN["decode_context"]] // 256, 4)
    cells = []
    for b in range(5):
        d = trace.duration_s[one & (keys == b)]
        cells.append(f"{1e3 * np.median(d):.2f} ({len(d)})" if len(d) else "-")
    return cells


def main(engine: str, runs: list[Path]) -> None:
    pooled = steps(runs, engine)
    traces = [steps([r], engine) for r in runs]
    shapes = [[shape(row) for row in t.features] for t in traces]
    counts = [Counter(s) for s in shapes]
    shared = [k for k in counts[0] if all(c[k] >= MIN_SHARED for c in counts)]
    pooled_shapes = [shape(row) for row in pooled.features]
    pooled_counts = Counter(pooled_shapes)

    def median_of(trace: TraceSteps, of: list[tuple[str, int, int]], key: tuple[str, int, int]) -> float:
        return float(np.median(trace.duration_s[[s == key for s in of]]))

    reference = {k: median_of(pooled, pooled_shapes, k) for k in shared}
    weight = sum(pooled_counts[k] * reference[k] for k in shared)
    covered = sum(pooled_counts[k] for k in shared)
    print(
        f"{engine}: {len(shared)} shapes with {MIN_SHARED}+ steps in each run: {covered} of {len(pooled_shapes)} steps"
    )
    print("single-row decode, median ms (steps) per context bin 0+ / 256+ / 512+ / 768+ / 1024+ keys; speed index")
    for run, trace, of in zip(runs, traces, shapes, strict=True):
        index = sum(pooled_counts[k] * median_of(trace, of, k) for k in shared) / weight
        print(f"  {run.name:28s} {' / '.join(single_row_decode_ms(trace))}; {100 * (index - 1):+.1f}% vs pooled")
    busy = float(pooled.duration_s.sum())
    print(f"profiles (us; pooled steps measured busy {busy:.2f} s): intercept, {', '.join(PRICES)}; priced busy")
    for name, dirs in [*((r.name, [r]) for r in runs), ("pooled", runs)]:
        profile = fit_run(dirs, [engine])
        prices = ", ".join(f"{1e6 * profile.coefficients.get(n, 0.0):.3f}" for n in PRICES)
        total = priced(profile, pooled)
        error = 100 * (total / busy - 1)
        print(f"  {name:28s} {1e6 * profile.intercept_s:.0f}, {prices}; {total:.2f} s ({error:+.1f}%)")


if __name__ == "__main__":
    main(sys.argv[1], [Path(p) for p in sys.argv[2:]])
