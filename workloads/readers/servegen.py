"""Alibaba ServeGen's published client data (github.com/alibaba/ServeGen, `data/<category>/<model>/`) as requests.

ServeGen publishes distributions, not request lists. One client is two files:

- `chunk-<id>-trace.csv`, no header, one window per line: `timestamp,rate,cv,pattern,shape,scale`: the
  window's start in seconds, its mean request rate (req/s), the coefficient of variation of its inter-arrival
  times, and the inter-arrival distribution fitted to it (`Gamma` or `Weibull`, with scipy's shape and scale;
  empty with rate 0 where the client sent nothing). A window lasts until the next line's timestamp (the last
  one as long as the one before it).
- `chunk-<id>-dataset.json`: `{"<timestamp>": {"input_tokens": "{224: 0.0003, ...}", "output_tokens": ...}}`,
  each value a Python dict literal of token count -> probability; a trace window uses the latest dataset
  window at or before its start.

The reader draws a request list from them as ServeGen's own generator does (`servegen/construct.py`):
ceil(rate x window) arrivals per window, gaps drawn from the fitted distribution and rescaled to fill the
window, lengths from the window's histograms. One difference: ServeGen draws one uniform number for every
field of a request, so its input and output lengths are perfectly rank-correlated; the data carries only the
marginals, so batchmark draws them independently. The draw is seeded (`SEED`): the same files give the same
requests. Only language data is read (`input_tokens`, `output_tokens`); other fields are refused by name.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from workloads.errors import WorkloadError
from workloads.options import MAX_REQUESTS, MAX_SPAN_S, MAX_TOKENS
from workloads.readers.raw import RawTable, parse_json, read_text

SEED = 0
PATTERNS = ("Gamma", "Weibull")
FIELDS = ("input_tokens", "output_tokens")
TRACE_NAME = re.compile(r"chunk-(\d+)-trace\.csv")


def is_servegen_trace(path: Path) -> bool:
    """A file named like ServeGen's `chunk-<id>-trace.csv`."""
    return TRACE_NAME.fullmatch(path.name) is not None


def dataset_path(path: Path) -> Path:
    return path.with_name(path.name.replace("-trace.csv", "-dataset.json"))


def _windows(path: Path, display: str) -> list[tuple[int, float, float, str, float, float, int]]:
    rows = []
    for number, line in enumerate(read_text(path, display).splitlines(), start=1):
        if not line.strip():
            continue
        cells = line.strip().split(",")
        if len(cells) != 6:
            raise WorkloadError(
                f"expected 6 fields (timestamp,rate,cv,pattern,shape,scale), found {len(cells)}",
                file=display,
                line=number,
                field="line",
            )
        values: list[Any] = []
        for name, text in zip(("timestamp", "rate", "cv"), cells[:3], strict=True):
            try:
                v = float(text)
            except ValueError:
                raise WorkloadError(f"not a number: {text!r}", file=display, line=number, field=name) from None
            if not math.isfinite(v) or v < 0 or (name == "timestamp" and (v > MAX_SPAN_S or v != int(v))):
                raise WorkloadError(
                    f"expected a finite number >= 0, found {text!r}", file=display, line=number, field=name
                )
            values.append(v)
        pattern = cells[3]
        if pattern and pattern not in PATTERNS:
            raise WorkloadError(
                f"unknown pattern {pattern!r}; expected {' or '.join(PATTERNS)} (or empty)",
                file=display,
                line=number,
                field="pattern",
            )
        params = []
        for name, text in zip(("shape", "scale"), cells[4:], strict=True):
            try:
                v = float(text)
            except ValueError:
                raise WorkloadError(f"not a number: {text!r}", file=display, line=number, field=name) from None
            if pattern and not (math.isfinite(v) and v > 0):
                raise WorkloadError(
                    f"expected a finite number > 0, found {text!r}", file=display, line=number, field=name
                )
            params.append(v)
        if values[1] > 0 and not pattern:
            raise WorkloadError("a window with a rate needs its pattern", file=display, line=number, field="pattern")
        if rows and int(values[0]) <= rows[-1][0]:
            raise WorkloadError(
                f"timestamp {int(values[0])} is not after the line before's {rows[-1][0]}",
                file=display,
                line=number,
                field="timestamp",
            )
        rows.append((int(values[0]), values[1], values[2], pattern, params[0], params[1], number))
    if not rows:
        raise WorkloadError("no windows", file=display, line=1, field="file")
    return rows


def _histogram(text: Any, display: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """A dataset value: token counts and their probabilities (a Python dict literal, never evaluated as code)."""
    try:
        table = ast.literal_eval(text) if isinstance(text, str) else None
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        table = None
    if not isinstance(table, dict) or not table:
        raise WorkloadError(
            "expected a non-empty dict literal of token count -> probability", file=display, field=where
        )
    counts, probs = [], []
    for k, p in table.items():
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_TOKENS:
            raise WorkloadError(f"token count {k!r} is not an integer 0..{MAX_TOKENS:,}", file=display, field=where)
        if isinstance(p, bool) or not isinstance(p, int | float) or not (math.isfinite(p) and p >= 0):
            raise WorkloadError(f"probability {p!r} of {k} is not a finite number >= 0", file=display, field=where)
        counts.append(k)
        probs.append(float(p))
    total = sum(probs)
    if not abs(total - 1) <= 1e-3:
        raise WorkloadError(f"probabilities sum to {total:.6g}, not 1", file=display, field=where)
    return np.asarray(counts, dtype=np.int64), np.asarray(probs) / total


def _datasets(path: Path, display: str) -> dict[int, dict[str, tuple[np.ndarray, np.ndarray]]]:
    data = parse_json(read_text(path, display), display, "a dataset of windows")
    if not isinstance(data, dict) or not data:
        raise WorkloadError("expected an object of windows", file=display, line=1, field="json")
    out = {}
    for ts, fields in data.items():
        if not re.fullmatch(r"\d+", ts) or not isinstance(fields, dict):
            raise WorkloadError("expected a window start in seconds holding an object", file=display, field=ts)
        extra = sorted(set(fields) - set(FIELDS))
        if extra:  # reasoning and multimodal data: fields batchmark cannot replay yet
            raise WorkloadError(
                f"not language data: unsupported field (read: {', '.join(FIELDS)})",
                file=display,
                field=f"{ts}.{extra[0]}",
            )
        for name in FIELDS:
            if name not in fields:
                raise WorkloadError("missing", file=display, field=f"{ts}.{name}")
        out[int(ts)] = {name: _histogram(fields[name], display, f"{ts}.{name}") for name in FIELDS}
    return out


def read_servegen(path: Path, display: str) -> RawTable:
    """One client's requests, drawn from its trace and dataset files: a typed table of arrival_s,
    input_tokens and output_tokens, each row carrying its window's line in the trace file."""
    windows = _windows(path, display)
    companion = dataset_path(path)
    if not path.name.endswith("-trace.csv") or not companion.is_file():
        raise WorkloadError(
            f"a ServeGen client is <name>-trace.csv with <name>-dataset.json beside it; found no "
            f"{companion.name if path.name.endswith('-trace.csv') else '<name>-dataset.json'}",
            file=display,
            line=1,
            field="file",
        )
    datasets = _datasets(companion, str(Path(display).with_name(companion.name)))
    rng = np.random.default_rng(SEED)
    arrivals: list[np.ndarray] = []
    inputs: list[np.ndarray] = []
    outputs: list[np.ndarray] = []
    lines: list[int] = []
    total = 0
    for i, (start, rate, _cv, pattern, shape, scale, number) in enumerate(windows):
        size = windows[i + 1][0] - start if i + 1 < len(windows) else (start - windows[i - 1][0] if i else 600)
        n = math.ceil(rate * size) if pattern else 0
        if not n:
            continue
        total += n
        if total > MAX_REQUESTS:
            raise WorkloadError(f"more than {MAX_REQUESTS:,} requests", file=display, line=number, field="rate")
        base = max((t for t in datasets if t <= start), default=None)
        if base is None:
            raise WorkloadError(
                f"no dataset window at or before {start} s in {dataset_path(path).name}",
                file=display,
                line=number,
                field="timestamp",
            )
        gaps = rng.gamma(shape, scale, n) if pattern == "Gamma" else scale * rng.weibull(shape, n)
        # rescaled to fill the window, as ServeGen does; a draw of all zeros (tiny shapes) spreads evenly
        gaps = gaps * (size / gaps.sum()) if gaps.sum() > 0 else np.full(n, size / n)
        arrivals.append(start + np.cumsum(gaps) - gaps[0])
        for name, sink in zip(FIELDS, (inputs, outputs), strict=True):
            counts, probs = datasets[base][name]
            sink.append(rng.choice(counts, n, p=probs))
        lines += [number] * n
    if not lines:
        raise WorkloadError("no requests: every window has rate 0", file=display, line=1, field="rate")
    return RawTable(
        header=["arrival_s", "input_tokens", "output_tokens"],
        columns={
            "arrival_s": np.concatenate(arrivals),
            "input_tokens": np.concatenate(inputs),
            "output_tokens": np.concatenate(outputs),
        },
        lines=lines,
        header_line=1,
    )
