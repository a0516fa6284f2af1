"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): one step shape's
measured speed over a run's time, per trial, beside its price. Steps of ROWS_MIN..ROWS_MAX one-row chunks (decode
rows and held slots), no prefill, under MAX_KEYS keys a row; per window of WINDOW_S seconds of the trial: steps,
median measured and median priced (the profile's mean model). Reads files only.

    .venv/bin/python docs/plans/shape_speed_windows.py PROFILE RUN ENGINE ROWS_MIN ROWS_MAX [MAX_KEYS] [WINDOW_S]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from engines.sim.fitted import FEATURE_NAMES, load_profile, regressors
from harness.simulation import trace_steps

COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}


def main(
    profile_path: Path, run: Path, engine: str, rows_min: int, rows_max: int, max_keys: int, window: float
) -> None:
    profile = load_profile(profile_path)
    coef = np.array([profile.coefficients.get(n, 0.0) for n in profile.regressors])
    for path in sorted((run / "steps").glob(f"{engine}-t*.jsonl")):
        trace = trace_steps([path])
        starts = np.array([json.loads(line)["t_start"] for line in path.read_text(encoding="utf-8").splitlines()])
        priced = profile.intercept_s + regressors(trace.features, profile.version) @ coef
        f = trace.features
        rows = f[:, COLUMN["decode_seqs"]] + f[:, COLUMN["held_rows"]]
        keep = (f[:, COLUMN["prefill_tokens"]] == 0) & (rows >= rows_min) & (rows <= rows_max)
        keep &= f[:, COLUMN["decode_context"]] < max_keys * np.maximum(rows, 1)
        cells = []
        for w in np.unique((starts[keep] // window).astype(int)):
            idx = keep & ((starts // window).astype(int) == w)
            cells.append(
                f"{w * window:.1f}s n={int(idx.sum())} {1e3 * np.median(trace.duration_s[idx]):.2f}"
                f"/{1e3 * np.median(priced[idx]):.2f}"
            )
        print(f"{path.stem}: measured/priced ms per window: " + " | ".join(cells))


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        Path(args[0]),
        Path(args[1]),
        args[2],
        int(args[3]),
        int(args[4]),
        int(args[5]) if len(args) > 5 else 256,
        float(args[6]) if len(args) > 6 else 2.5,
    )
