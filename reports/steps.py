"""Reading a step trace (steps/<engine>-t<trial>.jsonl) with a bounded cost, whatever its size.

A trace holds one JSON object per engine step, often with id lists and scheduler decisions: a long
run writes hundreds of megabytes, and parsing all of it would dominate the report's build time. The
report needs the trace only for figures (the utilisation numbers come from metrics.json), so:

- a trace up to `FULL_READ_BYTES` is read whole (exact);
- a larger one is sampled: up to `SAMPLE_CHUNKS` runs of consecutive steps, `FULL_READ_BYTES` in all,
  at evenly spaced offsets of the file. `spans` records the time each run
  covers, so occupancy per time bin is averaged over the covered time only (gaps between steps inside
  a run are the engine idling and count as zero; time between runs is unknown and is not counted);
- the detail view reads the few thousand steps it shows directly, found by bisecting the file on
  `t_start` (steps are written in time order).

Anything pyarrow cannot parse falls back to `harness.metrics.load_steps`, which reads everything.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.metrics import load_steps
from harness.metrics.arrow import ARROW_ERRORS, STEP_SCHEMA, parse_step_counts
from harness.metrics.frame import STEP_COLUMNS, steps_frame

FULL_READ_BYTES = 24 << 20
SAMPLE_CHUNKS = 256
MIN_CHUNK_BYTES = 1 << 16

FRAME_COLUMNS = list(STEP_COLUMNS)


def _fallback(path: Path) -> pd.DataFrame:
    return load_steps(path)[FRAME_COLUMNS]


@dataclass
class StepTrace:
    """A step trace read whole, or sampled in runs of steps when it is large."""

    path: Path
    frame: pd.DataFrame  # every step (exact) or the sampled runs of steps, in time order
    exact: bool
    spans: np.ndarray  # (runs, 2): [start, end] of the time each sampled run covers; one row when exact

    @property
    def empty(self) -> bool:
        return self.frame.empty

    def window(self, t0: float, max_steps: int) -> pd.DataFrame:
        """Up to `max_steps` consecutive steps starting at the first with t_start >= t0."""
        if self.exact:
            start = int(np.searchsorted(self.frame["t_start"].to_numpy(), t0))
            return self.frame.iloc[start : start + max_steps]
        return _read_window(self.path, t0, max_steps)


def read_trace(path: Path, full_read_bytes: int = FULL_READ_BYTES) -> StepTrace:
    size = path.stat().st_size
    if size <= full_read_bytes:
        try:
            frame = parse_step_counts(path)
        except ARROW_ERRORS:
            frame = _fallback(path)
        frame = frame.sort_values("t_start", kind="stable").reset_index(drop=True)
        spans = np.array([[frame["t_start"].min(), frame["t_end"].max()]]) if len(frame) else np.empty((0, 2))
        return StepTrace(path, frame, True, spans)
    runs = int(np.clip(full_read_bytes // MIN_CHUNK_BYTES, 1, SAMPLE_CHUNKS))
    chunk = full_read_bytes // runs  # < size / runs: runs never overlap
    pieces, run_of = [], []
    with path.open("rb") as f:
        for i in range(runs):
            offset = size * i // runs
            f.seek(offset)
            if offset:
                f.readline()  # finish the line the offset fell into
            data = f.read(chunk)
            cut = data.rfind(b"\n")
            if cut < 0:
                continue
            data = data[: cut + 1]
            pieces.append(data)
            run_of.append(np.full(data.count(b"\n") - data.count(b"\n\n"), i))
    try:
        frame = parse_step_counts(io.BytesIO(b"".join(pieces)))
    except ARROW_ERRORS:
        return read_trace(path, full_read_bytes=size)  # let the exact reader (or its fallback) handle it
    run_ids = np.concatenate(run_of) if run_of else np.empty(0, dtype=np.int64)
    if run_ids.size != len(frame):  # blank lines or odd spacing: treat every step as its own run
        run_ids = np.arange(len(frame))
    frame = frame.assign(_run=run_ids).sort_values("t_start", kind="stable").reset_index(drop=True)
    grouped = frame.groupby("_run")
    spans = np.column_stack([grouped["t_start"].min().to_numpy(), grouped["t_end"].max().to_numpy()])
    return StepTrace(path, frame.drop(columns="_run"), False, spans)


def _t_start_at(f: io.BufferedReader, offset: int) -> float | None:
    """t_start of the first whole line after `offset` (None at the end of the file)."""
    f.seek(offset)
    if offset:
        f.readline()
    line = f.readline()
    while line and not line.strip():
        line = f.readline()
    if not line:
        return None
    return float(json.loads(line)["t_start"])


def _read_window(path: Path, t0: float, max_steps: int) -> pd.DataFrame:
    size = path.stat().st_size
    lo, hi = 0, size
    with path.open("rb") as f:
        while hi - lo > (1 << 16):
            mid = (lo + hi) // 2
            t = _t_start_at(f, mid)
            if t is None or t >= t0:
                hi = mid
            else:
                lo = mid
        f.seek(lo)
        if lo:
            f.readline()
        rows = []
        for line in f:
            if not line.strip():
                continue
            obj = json.loads(line)
            if float(obj["t_start"]) < t0:
                continue
            rows.append({k: obj.get(k) for k in STEP_SCHEMA.names})
            if len(rows) >= max_steps:
                break
    return steps_frame(rows)[FRAME_COLUMNS]
