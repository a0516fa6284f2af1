"""Reading a trace file into raw columns, each value tied to the line it came from.

Nothing is interpreted here beyond CSV/JSON syntax: values stay strings (CSV) or JSON values, so that
`validate` can name the exact line and field of the first bad one.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workloads.errors import WorkloadError


class Missing:
    """Marks a JSONL row that lacks a key (distinct from an explicit null)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = Missing()


@dataclass(frozen=True)
class RawTable:
    """A CSV or JSONL file's columns as read, with each row's line number for error messages."""

    header: list[str]
    columns: dict[str, list[Any] | np.ndarray]  # one entry per row
    lines: list[int]  # line number of each row in the file (1-based)
    header_line: int  # where a missing column is reported
    typed: bool = True  # JSON values can be anything; CSV values are always strings


def read_text(path: Path, display: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WorkloadError("no such file", file=display, field="file") from None
    except IsADirectoryError:
        raise WorkloadError("is a directory, not a trace file", file=display, field="file") from None
    except OSError as exc:
        raise WorkloadError(f"cannot read: {exc.strerror}", file=display, field="file") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise WorkloadError(
            "not UTF-8 text (a binary or compressed file?)", file=display, line=line, field="file"
        ) from None
    if not text.strip():
        raise WorkloadError("empty file", file=display, line=1, field="file")
    return text


def parse_json(text: str, display: str, what: str, line: int = 1, hint: str = "") -> Any:
    """`text`, which starts at `line` of `display`, as JSON; else one error naming the line: not JSON, or
    nested past the parser's own limit (a RecursionError: nesting that no `what` has)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = line + exc.lineno - 1
        raise WorkloadError(
            f"not valid JSON ({exc.msg} at column {exc.colno}){hint}", file=display, line=at, field="json"
        ) from None
    except RecursionError:
        raise WorkloadError(f"nested too deeply for {what}", file=display, line=line, field="json") from None


def _csv_rows(text: str, display: str) -> tuple[list[list[str]], list[int]]:
    """Non-blank rows and their line numbers, through `csv` (quoted fields may hold commas or newlines)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[list[str]] = []
    starts: list[int] = []
    end = 0
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append(row)
                starts.append(end + 1)
            end = reader.line_num
    except csv.Error as exc:
        raise WorkloadError(f"not valid CSV: {exc}", file=display, line=reader.line_num, field="row") from None
    return rows, starts


def _check_widths(widths: np.ndarray, lines: list[int], expected: int, display: str) -> None:
    wrong = np.flatnonzero(widths != expected)
    if len(wrong):
        raise WorkloadError(
            f"expected {expected} fields like the header, found {widths[wrong[0]]}",
            file=display,
            line=lines[wrong[0]],
            field="row",
        )


def _check_header(header: list[str], line: int, display: str) -> None:
    """A name twice would silently keep only its last column."""
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise WorkloadError("column named twice in the header", file=display, line=line, field=name or "header")
        seen.add(name)


def _unquoted_table(text: str, display: str) -> RawTable | None:
    """Without quotes every line is one row, so pandas' C parser can split the cells of a million-row trace;
    line numbers, field counts and blank lines come from byte positions. None: use the `csv` path instead."""
    data = text.encode("utf-8")
    raw = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(raw == ord("\n"))
    starts = np.concatenate(([0], newlines + 1))
    ends = np.append(newlines, len(raw))
    if starts[-1] == len(raw):  # nothing after the final newline
        starts, ends = starts[:-1], ends[:-1]
    comma_at = np.flatnonzero(raw == ord(","))
    widths = np.searchsorted(comma_at, ends) - np.searchsorted(comma_at, starts) + 1
    blank = np.zeros(len(starts), dtype=bool)
    short = np.flatnonzero(ends - starts - widths < 8)  # blank lines hide among the short ones
    blank[short] = [not data[a:b].strip(b" \t\r,") for a, b in zip(starts[short], ends[short], strict=True)]
    keep = np.flatnonzero(~blank)
    try:
        cells = pd.read_csv(
            io.StringIO(text),
            header=None,
            names=range(int(widths.max())),
            dtype=object,
            na_filter=False,
            skip_blank_lines=False,
            engine="c",
        )
    except (pd.errors.ParserError, ValueError):
        return None
    if len(cells) != len(starts):  # e.g. lone carriage returns as line ends
        return None
    header = [str(cell).strip() for cell in cells.iloc[keep[0], : widths[keep[0]]]]
    _check_header(header, int(keep[0]) + 1, display)
    body = keep[1:]
    lines = (body + 1).tolist()
    _check_widths(widths[body], lines, len(header), display)
    columns = {name: cells[i].to_numpy(dtype=object)[body] for i, name in enumerate(header)}
    return RawTable(header, columns, lines, int(keep[0]) + 1, typed=False)


def read_csv_raw(path: Path, display: str) -> RawTable:
    text = read_text(path, display)
    fast = _unquoted_table(text, display) if '"' not in text else None
    if fast is not None:
        return fast
    cells, numbers = _csv_rows(text, display)
    header = [cell.strip() for cell in cells[0]]  # read_text rejected a blank file, so there is a first row
    _check_header(header, numbers[0], display)
    rows, lines = cells[1:], numbers[1:]
    _check_widths(np.fromiter(map(len, rows), dtype=np.int64, count=len(rows)), lines, len(header), display)
    # No rows is reported after the header is checked, so a file in the wrong format says so first.
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    return RawTable(header, columns, lines, numbers[0], typed=False)


def read_jsonl_raw(path: Path, display: str) -> RawTable:
    objects: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, line in enumerate(read_text(path, display).split("\n"), start=1):
        if not line.strip():
            continue
        obj = parse_json(line, display, "a trace row", number, "; expected one JSON object per line")
        if not isinstance(obj, dict):
            raise WorkloadError(
                f"expected a JSON object per line, found {type(obj).__name__}", file=display, line=number, field="json"
            )
        objects.append(obj)
        lines.append(number)
    header = list(objects[0])
    keys = dict.fromkeys(k for obj in objects for k in obj)
    columns = {k: [obj.get(k, MISSING) for obj in objects] for k in keys}
    return RawTable(header, columns, lines, lines[0])
