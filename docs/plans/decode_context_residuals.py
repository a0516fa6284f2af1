"""In-sample step residuals by regime, version-2 form against version-3 form (issue 30's context-binned decode
log, docs/measurements/2026-12-06-context-binned-decode.md): fits both forms on one engine's first trial of a fit
run (`batchmark run --workload step-profile-wide ... --out FIT_RUN`) and prints, per bin, the median measured
step against the median priced step. Fits only; nothing is timed.

    .venv/bin/python docs/plans/decode_context_residuals.py FIT_RUN OUT_DIR
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

from engines.sim.fitted import FEATURE_NAMES, fit_steps, regressors
from harness.simulation import trace_steps

COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}


def regime(row: np.ndarray) -> tuple[str, int] | None:
    """The bin a step falls in: one-sequence decode by context, batched decode by context a row, prefill by rows."""
    decode, prefill, held = (row[COLUMN[n]] for n in ("decode_seqs", "prefill_tokens", "held_rows"))
    if prefill == 0 and decode == 1 and held == 0:
        return "1-seq decode ctx", min(int(row[COLUMN["decode_context"]]) // 512 * 512, 4096)
    if prefill == 0 and decode + held > 1:
        per_row = row[COLUMN["decode_context"]] / (decode + held)
        return "batch decode ctx/row", min(int(per_row) // 512 * 512, 4096)
    if prefill > 0:
        rows = int(prefill + row[COLUMN["padded_rows"]] - held)
        return "prefill rows", max(edge for edge in (0, 512, 2048, 8192) if rows >= edge)
    return None


def main(run: Path, out: Path) -> None:
    for engine in ("continuous", "static"):
        trace = trace_steps([run / "steps" / f"{engine}-t0.jsonl"])
        priced = {}
        for version in (2, 3):
            profile = fit_steps(trace, version=version)
            profile.engine = {}
            profile.save(out / f"profile-{engine}-v{version}.json")
            coef = np.array([profile.coefficients[n] for n in profile.regressors])
            priced[version] = profile.intercept_s + regressors(trace.features, version) @ coef
            fit = profile.fit
            print(
                f"{engine} v{version}: intercept {1e3 * profile.intercept_s:.3f} ms, r2 {fit['r2']:.4f}, "
                f"rmse {1e3 * fit['rmse_s']:.3f} ms, total {100 * fit['total_error']:+.2f}%"
            )
            print("   " + ", ".join(f"{k}={v:.3g}" for k, v in profile.coefficients.items()))
        bins: dict[tuple[str, int], list[int]] = {}
        for i, row in enumerate(trace.features):
            key = regime(row)
            if key is not None:
                bins.setdefault(key, []).append(i)
        print(f"{engine}: median real vs priced per bin, v2 form -> v3 form (in-sample)")
        for (name, edge), idx in sorted(bins.items()):
            real = statistics.median(trace.duration_s[idx])
            v2, v3 = (statistics.median(priced[v][idx]) for v in (2, 3))
            print(
                f"   {name:22s} {edge:>5}+ n={len(idx):5d} real {1e3 * real:7.2f} ms"
                f"  v2 {1e3 * v2:7.2f} ({100 * (v2 - real) / real:+4.0f}%)"
                f"  v3 {1e3 * v3:7.2f} ({100 * (v3 - real) / real:+4.0f}%)"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
