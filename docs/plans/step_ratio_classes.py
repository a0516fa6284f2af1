"""Each traced step's measured / priced ratio (priced by a profile, noise aside), summarised by step class (decode
rows 1, 2-7, 8+, and steps with prefill) and, for decode, by rows and keys a row: the level a class runs at in a real
run, in its twins (their step traces, as `batchmark sim fidelity RUN --twin-dir DIR` writes them) and in the fit
runs. The twins' replayed noise keeps each class's level from the fit runs (engines/sim/noise.py); this shows where
a run's own level differs. Reads files only.

    .venv/bin/python docs/plans/step_ratio_classes.py PROFILE ENGINE RUN TWIN_DIR FIT_RUN[,FIT_RUN...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from engines.sim.fitted import load_profile
from engines.step_features import FEATURE_NAMES
from harness.simulation import trace_steps

COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
ROW_BANDS = ((1, 2), (2, 4), (4, 8), (8, 16))
KEY_BANDS = ((0, 256), (256, 1024), (1024, None))


def summarise(paths: list[Path], profile_path: Path, label: str) -> None:
    steps = trace_steps(paths)
    f = steps.features
    ratio = steps.duration_s / load_profile(profile_path).price_steps(f)
    rows = f[:, COLUMN["decode_seqs"]] + f[:, COLUMN["held_rows"]]
    decode = f[:, COLUMN["prefill_tokens"]] == 0
    per_row = f[:, COLUMN["decode_context"]] / np.maximum(rows, 1)
    classes = {
        "prefill": ~decode,
        "decode 1 row": decode & (rows == 1),
        "decode 2-7 rows": decode & (rows >= 2) & (rows < 8),
        "decode 8+ rows": decode & (rows >= 8),
    }
    for (low, high), (k_low, k_high) in ((r, k) for r in ROW_BANDS for k in KEY_BANDS):
        band = decode & (rows >= low) & (rows < high) & (per_row >= k_low)
        if k_high is not None:
            band &= per_row < k_high
        classes[f"  rows {low}-{high - 1}, keys a row {k_low}-{k_high or 'up'}"] = band
    for name, chosen in classes.items():
        x = ratio[chosen]
        if x.size >= 20:
            p5, p50, p95 = np.percentile(x, [5, 50, 95])
            print(f"{label:<5} {name:<36} n={x.size:6d} mean {x.mean():.3f} p5 {p5:.3f} p50 {p50:.3f} p95 {p95:.3f}")


def main(profile: Path, engine: str, run: Path, twin: Path, fits: list[Path]) -> None:
    summarise(sorted(run.glob(f"steps/{engine}-t*.jsonl")), profile, "real")
    summarise(sorted(twin.glob("steps/*.jsonl")), profile, "twin")
    summarise([p for fit in fits for p in sorted(fit.glob(f"steps/{engine}-t*.jsonl"))], profile, "fit")


if __name__ == "__main__":
    profile, engine, run, twin, fits = sys.argv[1:6]
    main(Path(profile), engine, Path(run), Path(twin), [Path(p) for p in fits.split(",")])
