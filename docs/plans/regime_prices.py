"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): the same kind of
step in the fit run and in suite pairs' real runs, measured and priced. Per regime (decode steps by rows and
context a row, prefill steps by prompt rows), the median measured step and the median priced step (the profile's
mean model) in each run given, so a price that is wrong in the pairs can be told apart from a step that ran at
another speed than the same step in the fit run. Reads files only.

    .venv/bin/python docs/plans/regime_prices.py PROFILE ENGINE RUN [RUN ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from engines.sim.fitted import FEATURE_NAMES, load_profile, regressors
from harness.simulation import trace_steps

COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
CONTEXT_EDGES = (0, 256, 1024, 2048)  # the version-3 knots, then long rows
PREFILL_EDGES = (0, 128, 512, 1024, 2048)


def regime(row: np.ndarray) -> str:
    decode, prefill, held = (int(row[COLUMN[n]]) for n in ("decode_seqs", "prefill_tokens", "held_rows"))
    if prefill > 0:
        rows = prefill + int(row[COLUMN["padded_rows"]]) - held
        edge = max(e for e in PREFILL_EDGES if rows >= e)
        return f"prefill {edge}+ rows" + (" +decode" if decode else "")
    per_row = row[COLUMN["decode_context"]] / max(1, decode + held)
    edge = max(e for e in CONTEXT_EDGES if per_row >= e)
    return f"decode {min(decode + held, 4)} rows ctx {edge}+"


def main(profile_path: Path, engine: str, runs: list[Path]) -> None:
    profile = load_profile(profile_path)
    coef = np.array([profile.coefficients.get(n, 0.0) for n in profile.regressors])
    table: dict[str, dict[str, tuple[int, float, float, float]]] = {}
    for run in runs:
        trace = trace_steps(sorted((run / "steps").glob(f"{engine}-t*.jsonl")))
        priced = profile.intercept_s + regressors(trace.features, profile.version) @ coef
        keys = np.array([regime(row) for row in trace.features])
        for key in np.unique(keys):
            idx = keys == key
            share = float(trace.duration_s[idx].sum() / trace.duration_s.sum())
            real, model = float(np.median(trace.duration_s[idx])), float(np.median(priced[idx]))
            table.setdefault(key, {})[run.name] = (int(idx.sum()), real, model, share)
        total = (priced.sum() - trace.duration_s.sum()) / trace.duration_s.sum()
        print(
            f"{run.name}: {len(trace.duration_s)} steps, busy {trace.duration_s.sum():.3f} s, priced "
            f"{priced.sum():.3f} s ({100 * total:+.1f}%)"
        )
    print("regime: per run, steps n, median measured ms -> median priced ms (error), share of busy time")
    for key in sorted(table):
        cells = [
            f"{run}: n={n} {1e3 * r:.2f}->{1e3 * m:.2f} ({100 * (m - r) / r:+.0f}%) {100 * s:.0f}%"
            for run, (n, r, m, s) in table[key].items()
        ]
        print(f"  {key:28s} " + " | ".join(cells))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], [Path(p) for p in sys.argv[3:]])
