"""Issue 30: the price of long-context decode steps (docs/measurements/2026-12-07-long-context-decode-price.md).

A version-3 profile splits a step's decode keys at DECODE_KNOTS as if every one-row chunk sat at the step's mean
context (the trace records only the sum). Each decode row's own context can be read back from a run's files: its
prompt tokens plus the tokens it had emitted before the step started (records.jsonl's token_times), which must add
up to the step's `decode_context` (checked; a step where they do not keeps the mean split). This script refits the
version-3 form on the suite's pooled continuous fit runs twice, with the keys split at the mean context (as `sim
fit` does: the committed profile's coefficients) and split row by row, and prices every step of each RUN both ways,
noise aside. It prints, per run, the decode-only steps with a row past the last knot (the long-context steps):
their count, measured time and price error either way (all of them, then those with other rows beside the long
one), and the whole busy time's error; and the same for each fit run, against the price fitted on them. Reads
files only.

    .venv/bin/python docs/plans/long_context_steps.py MEAS_RUNS_DIR RUN [RUN ...]

MEAS_RUNS_DIR holds fit-step-profile-cover, -2, -3 with their step traces (a suite's --measure directory).
"""

from __future__ import annotations

import bisect
import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from engines.sim.fitted import DECODE_KNOTS

FITS = ("fit-step-profile-cover", "fit-step-profile-cover-2", "fit-step-profile-cover-3")
BASE = ("prefill_tokens", "prefill_chunks", "decode_seqs", "prefill_self_pairs", "prefill_context_pairs")


def split(keys: list[int]) -> tuple[int, int, int]:
    """Keys up to the first knot, between the knots and past the last, row by row."""
    low, high = DECODE_KNOTS
    first = sum(min(k, low) for k in keys)
    last = sum(max(0, k - high) for k in keys)
    return first, sum(keys) - first - last, last


def mean_split(keys: int, rows: int) -> tuple[int, int, int]:
    """`engines.sim.fitted.decode_segments`: every row at the mean context."""
    low, high = DECODE_KNOTS
    first, last = min(keys, low * rows), max(0, keys - high * rows)
    return first, keys - first - last, last


def read_run(run: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per step of the run's continuous trace: regressors split at the mean, split by row, its duration, and
    whether it is a decode-only step with a row past the last knot (1: that row alone, 2: beside others)."""
    emitted = {}
    for line in (run / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("trial", 0) == 0:  # the trace read is trial 0's (continuous-t0.jsonl)
            emitted[record["request_id"]] = (record["prompt_tokens"], sorted(record["token_times"] or []))
    mean, exact, duration, long_rows = [], [], [], []
    for line in (run / "steps" / "continuous-t0.jsonl").read_text().splitlines():
        step = json.loads(line)
        rows, keys = step["decode_seqs"], step["decode_context"]
        # a row that has emitted a token is decoding; its context is its prompt and what it emitted
        members = [emitted[i] for i in step["running_ids"]]
        context = [p + n for p, t in members if (n := bisect.bisect_right(t, step["t_start"]))]
        known = rows and len(context) == rows and sum(context) == keys
        base = [step[name] for name in BASE]
        mean.append([1, *base, *mean_split(keys, rows)])
        exact.append([1, *base, *(split(context) if known else mean_split(keys, rows))])
        duration.append(step["t_end"] - step["t_start"])
        long_row = known and not step["prefill_tokens"] and max(context) > DECODE_KNOTS[-1]
        long_rows.append(2 if long_row and rows > 1 else int(bool(long_row)))
    return np.array(mean, float), np.array(exact, float), np.array(duration), np.array(long_rows)


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`engines.sim.fitted`'s fit: unweighted non-negative least squares on columns scaled to their largest."""
    scale = np.maximum(np.abs(x).max(axis=0), 1e-300)
    solution, _ = nnls(x / scale, y)
    return solution / scale


def error(priced: np.ndarray, measured: np.ndarray) -> str:
    return f"{priced.sum() / measured.sum() - 1:+.1%}" if measured.size else "-"


def main(meas: Path, runs: list[Path]) -> None:
    fits = [read_run(meas / name) for name in FITS]
    pooled = [np.concatenate(parts) for parts in zip(*fits, strict=True)]
    mean_coef, exact_coef = fit(pooled[0], pooled[2]), fit(pooled[1], pooled[2])
    for name, coef, x in (("mean", mean_coef, pooled[0]), ("by row", exact_coef, pooled[1])):
        rmse = float(np.sqrt(np.mean((x @ coef - pooled[2]) ** 2)))
        print(f"fit, keys split {name}: rmse {rmse * 1e3:.3f} ms; us per key by segment {np.round(coef[-3:] * 1e6, 3)}")
    for label, (mean, exact, measured, long_rows) in [*zip(FITS, fits, strict=True), *map(read_run_pair, runs)]:
        for what, pick in (("long-context", long_rows > 0), ("of them with other rows", long_rows == 2)):
            print(
                f"{label}: {int(pick.sum())} {what} steps, measured {measured[pick].sum() * 1e3:.1f} ms, priced "
                f"{error((mean @ mean_coef)[pick], measured[pick])} (split at the mean), "
                f"{error((exact @ exact_coef)[pick], measured[pick])} (by row)"
            )
        print(f"{label}: busy time priced {error(mean @ mean_coef, measured)} / {error(exact @ exact_coef, measured)}")


def read_run_pair(run: Path) -> tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    return run.name, read_run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
