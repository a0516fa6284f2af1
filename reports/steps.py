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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from harness.metrics import load_steps
from harness.metrics.arrow import ARROW_ERRORS, STEP_SCHEMA, parse_step_counts
from harness.metrics.columns import RowError
from harness.metrics.frame import STEP_COLUMNS, line_error, parse_line, skip_last_line, steps_frame
from harness.records import RecordError

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


def read_trace(path: Path, full_read_bytes: int | None = None) -> StepTrace:
    full_read_bytes = full_read_bytes or FULL_READ_BYTES  # read here: a test lowers it to reach the sampling
    size = path.stat().st_size
    if size <= full_read_bytes:
        try:
            frame = parse_step_counts(path)
        except (*ARROW_ERRORS, RowError):  # the full reader names the line and field
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
    except (*ARROW_ERRORS, RowError):  # a row of the sample is no line number: the exact reader names it
        return read_trace(path, full_read_bytes=size)  # let the exact reader (or its fallback) handle it
    run_ids = np.concatenate(run_of) if run_of else np.empty(0, dtype=np.int64)
    if run_ids.size != len(frame):  # blank lines or odd spacing: treat every step as its own run
        run_ids = np.arange(len(frame))
    frame = frame.assign(_run=run_ids).sort_values("t_start", kind="stable").reset_index(drop=True)
    grouped = frame.groupby("_run")
    spans = np.column_stack([grouped["t_start"].min().to_numpy(), grouped["t_end"].max().to_numpy()])
    return StepTrace(path, frame.drop(columns="_run"), False, spans)


def _t_start_at(f: BinaryIO, path: Path, offset: int) -> float | None:
    """t_start of the first whole line after `offset` (None at the end of the file)."""
    f.seek(offset)
    if offset:
        f.readline()
    at = f.tell()
    line = f.readline()
    while line and not line.strip():
        at = f.tell()
        line = f.readline()
    step = _step(f, path, at, line) if line else None
    return None if step is None else _t_start(path, at, step)


def _read_window(path: Path, t0: float, max_steps: int) -> pd.DataFrame:
    size = path.stat().st_size
    lo, hi = 0, size
    with path.open("rb") as f:
        while hi - lo > (1 << 16):
            mid = (lo + hi) // 2
            t = _t_start_at(f, path, mid)
            if t is None or t >= t0:
                hi = mid
            else:
                lo = mid
        f.seek(lo)
        if lo:
            f.readline()
        rows, starts = [], []
        at = f.tell()
        for line in f:
            line_at, at = at, at + len(line)
            if not line.strip():
                continue
            step = _step(f, path, line_at, line)
            if step is None or _t_start(path, line_at, step) < t0:
                continue
            rows.append({k: step.get(k) for k in STEP_SCHEMA.names})
            starts.append(line_at)
            if len(rows) >= max_steps:
                break
    return _frame(path, rows, starts)


# The window read seeks into the file, so it knows a line by its byte offset: its number is counted only
# for an error, and its faults are the exact reader's (`harness.metrics.frame`), in the same words.


def _step(f: BinaryIO, path: Path, at: int, line: bytes) -> dict[str, Any] | None:
    """The step on the line starting at byte `at`; None for a bad last line after whole ones (a crash
    mid-write: skipped with the exact reader's warning); any other bad line is its error."""
    try:
        return parse_line(line)
    except ValueError as exc:
        lineno, whole_before = _line_of(path, at)
        if whole_before and not f.read().strip():
            skip_last_line(path, lineno, line, exc)
            return None
        raise line_error(path, lineno, exc) from None


def _t_start(path: Path, at: int, step: dict[str, Any]) -> float:
    value = step.get("t_start")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return float(_frame(path, [step], [at])["t_start"].iloc[0])  # a bad value: the typed column's error


def _frame(path: Path, rows: list[dict[str, Any]], starts: list[int]) -> pd.DataFrame:
    try:
        return steps_frame(rows)[FRAME_COLUMNS]
    except RowError as exc:
        raise RecordError(f"{path}:{_line_of(path, starts[exc.row])[0]}: {exc.what}") from None
    except RecordError as exc:  # a required field absent from every row read
        raise RecordError(f"{path}:{_line_of(path, starts[0])[0]}: {exc}") from None


def _line_of(path: Path, at: int) -> tuple[int, bool]:
    """The number of the line starting at byte `at`, and whether a non-blank line comes before it."""
    newlines, whole_before = 0, False
    with path.open("rb") as f:
        while at > 0:
            block = f.read(min(at, 1 << 20))
            if not block:
                break
            newlines += block.count(b"\n")
            whole_before = whole_before or bool(block.strip())
            at -= len(block)
    return newlines + 1, whole_before
