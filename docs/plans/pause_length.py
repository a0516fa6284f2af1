"""Issue 30: does a longer pause give a slower warm-up? (docs/measurements/2026-12-07-fidelity-suite-v7.md,
section 6) Per run, each idle pause's length and the median measured / noise-free price of the 8th to 31st steps
after it, binned by pause length. Files only.

    ENGINE=static|continuous .venv/bin/python docs/plans/pause_length.py PROFILE RUN [RUN ...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from docs.plans.cell_split import IDLE_S, steps
from engines.sim.fitted import load_profile

ENGINE = os.environ.get("ENGINE", "continuous")
BINS = (0.005, 0.02, 0.1, 0.5, 2.0)  # pause length, seconds: a pause counts in the last bin at or below it


def main(profile_path: Path, runs: list[Path]) -> None:
    profile = load_profile(profile_path)
    for run in runs:
        by: dict[float, list[float]] = {}
        steady: list[float] = []
        pauses: dict[float, int] = {}
        for path in sorted((run / "steps").glob(f"{ENGINE}-t*.jsonl")):
            rows, price = steps(path, profile)
            ratio = np.array([(r["t_end"] - r["t_start"]) for r in rows]) / price
            pause_at, since = 0.0, 10**9
            for i, row in enumerate(rows):
                gap = row["t_start"] - rows[i - 1]["t_end"] if i else 0.0
                if gap > IDLE_S:
                    pause_at, since = max(b for b in BINS if b <= gap), 0
                    pauses[pause_at] = pauses.get(pause_at, 0) + 1
                else:
                    since += 1
                if 8 <= since <= 31:
                    by.setdefault(pause_at, []).append(ratio[i])
                elif since >= 32:
                    steady.append(ratio[i])
        cells = " ".join(
            f"{b * 1000:g}+ ms: {np.median(v):.3f} ({pauses[b]} pauses, {len(v)} steps)" for b, v in sorted(by.items())
        )
        print(f"{run.name}: steps 8-31 after a pause, by its length: {cells}; steps 32+: {np.median(steady):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
