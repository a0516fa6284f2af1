"""Issue 30: do steps run slower right after the engine sat idle? (docs/measurements/2026-12-07-fidelity-v6-cells.md)

Per run, every traced step's measured / noise-free price (the profile's), by how many steps ran since the engine
last sat idle (a pause over docs/plans/cell_split.py's IDLE_S; 0: the first step after it), as medians (steps):
over all steps, then over single-row decode steps only. Reads files only.

    [ENGINE=static] .venv/bin/python docs/plans/idle_warmup.py PROFILE RUN [RUN ...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from docs.plans.cell_split import since_idle, steps
from docs.plans.pricing_split import shape
from engines.sim.fitted import load_profile
from harness.simulation import trace_steps

ENGINE = os.environ.get("ENGINE", "continuous")  # whose traces: continuous-tN.jsonl or static-tN.jsonl
EDGES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 32)  # a step counts in the last edge at or below its count


def main(profile_path: Path, runs: list[Path]) -> None:
    profile = load_profile(profile_path)
    for run in runs:
        every: dict[int, list[float]] = {}
        single: dict[int, list[float]] = {}
        for path in sorted((run / "steps").glob(f"{ENGINE}-t*.jsonl")):
            rows, price = steps(path, profile)
            since = since_idle(rows)
            for row, p, f, k in zip(rows, price, trace_steps([path]).features, since, strict=True):
                edge = max(e for e in EDGES if e <= k)
                ratio = (row["t_end"] - row["t_start"]) / p
                every.setdefault(edge, []).append(ratio)
                if shape(f)[:2] == ("decode", 1):
                    single.setdefault(edge, []).append(ratio)
        print(f"{run.name}: steps since idle (8: 8-31, 32: 32+): median measured / price (steps)")
        for name, by in (("all steps", every), ("1-row decode", single)):
            print(f"  {name}: " + " ".join(f"{e}: {np.median(v):.3f} ({len(v)})" for e, v in sorted(by.items())))


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
