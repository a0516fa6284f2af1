"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): the static
profile refitted with a prompt's pad rows priced as its real rows (one price for both: the runner computes them
alike), to size how much of azure-code-static's TTFT error is the fit splitting one cost between two collinear
columns. Refits the fit run's static trace with pad rows counted as prefill tokens, keeps the committed profile's
engine shape, gap and dispatch, and writes a profile for `batchmark sim fidelity --profile`. A diagnostic, not a
suite change: the suite's committed profiles stay as they are. Fits only; nothing is timed.

    .venv/bin/python docs/plans/static_tied_pad.py FIT_RUN COMMITTED_STATIC_PROFILE OUT_PROFILE
"""

from __future__ import annotations

import sys
from pathlib import Path

from engines.sim.fitted import FEATURE_NAMES, fit_steps, load_profile
from harness.simulation import trace_steps

COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}


def main(fit_run: Path, committed: Path, out: Path) -> None:
    trace = trace_steps([fit_run / "steps" / "static-t0.jsonl"])
    f = trace.features
    pad = f[:, COLUMN["padded_rows"]] - f[:, COLUMN["held_rows"]]  # prompt pad rows (held slots stay apart)
    f[:, COLUMN["prefill_tokens"]] += pad
    f[:, COLUMN["padded_rows"]] -= pad
    tied = fit_steps(trace, version=3)
    base = load_profile(committed)
    tied.engine, tied.dispatch_s = base.engine, base.dispatch_s
    tied.save(out)
    fit = tied.fit
    print(f"tied: intercept {1e3 * tied.intercept_s:.3f} ms, r2 {fit['r2']:.4f}, rmse {1e3 * fit['rmse_s']:.3f} ms")
    for name in ("prefill_tokens", "prompt_pad_rows", "prefill_chunks", "prefill_self_pairs", "decode_seqs"):
        print(f"   {name}: committed {base.coefficients[name]:.3g} s, tied {tied.coefficients[name]:.3g} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
