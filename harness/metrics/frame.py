"""Record and step-trace tables: the only module that reads the on-disk shape (JSON lines).

Everything downstream works on the DataFrames built here. Columns and dtypes come from the two record
schemas (`harness.records.RequestRecord`, `engines.step_record.StepRecord`) through `harness.metrics.columns`:
times are float64 seconds (NaN when absent), optional counts are float64 (NaN when the engine did not
report them), text columns are pandas strings, list columns hold Python lists.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from harness.collector import collector_paused
from harness.metrics.columns import REQUEST_RECORD_COLUMNS, STEP_RECORD_COLUMNS, Column, RowError, typed, with_absent
from harness.records import RecordError, RequestRecord

RECORD_COLUMNS: tuple[str, ...] = tuple(c.name for c in REQUEST_RECORD_COLUMNS)
STEP_COLUMNS: tuple[str, ...] = tuple(c.name for c in STEP_RECORD_COLUMNS)


class TruncatedLineWarning(UserWarning):
    """The last line of a JSON-lines file did not parse (a run that crashed mid-write); it was skipped."""


def _as_dict(row: Mapping[str, Any] | RequestRecord) -> Mapping[str, Any]:
    if isinstance(row, RequestRecord):
        return row.to_json()
    if isinstance(row, Mapping):
        return row
    raise RecordError(f"a record must be a dict or RequestRecord, got {type(row).__name__}")


def _table(rows: list[Mapping[str, Any]], columns: tuple[Column, ...], what: str) -> pd.DataFrame:
    try:
        frame = pd.DataFrame.from_records(rows)
    except UnicodeError:  # a lone surrogate ("\ud800" in the JSON) cannot become a string column
        raise _surrogate(rows) from None
    if frame.empty:
        frame = pd.DataFrame(columns=[c.name for c in columns])
    required = [c.name for c in columns if c.required]
    missing = [name for name in required if name not in frame.columns]
    if missing:
        raise RecordError(f"{what} required field(s): {', '.join(missing)}")
    frame = typed(with_absent(frame, columns), columns)
    names = [c.name for c in columns]
    extra = [c for c in frame.columns if c not in names]  # a newer schema's keys are kept
    return frame[names + extra].reset_index(drop=True)


def _surrogate(rows: list[Mapping[str, Any]]) -> RowError:
    for row, record in enumerate(rows):
        for key, value in record.items():
            if isinstance(value, str):
                try:
                    value.encode("utf-8")
                except UnicodeError:
                    return RowError(row, f"{key}: not valid Unicode (a lone surrogate)")
    return RowError(0, "a text field is not valid Unicode")


def records_frame(rows: Iterable[Mapping[str, Any] | RequestRecord]) -> pd.DataFrame:
    """One row per request, with every `RequestRecord` column present and typed.

    Unknown keys are kept as extra columns so a newer record schema still loads.
    """
    return _table([_as_dict(r) for r in rows], REQUEST_RECORD_COLUMNS, "records lack")


def steps_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per engine step with every `StepRecord` column present and typed."""
    return _table(list(rows), STEP_RECORD_COLUMNS, "step trace lacks")


def read_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Parse a JSON-lines file; returns (objects, skipped) where skipped describes a dropped last line.

    Only the last line may be bad: that is what a crash mid-write leaves. A bad line anywhere else
    means the file is corrupt, and silently dropping it would bias every metric. A file whose only line
    is bad holds nothing to read: one error naming that line, not a warning and then "holds no records".
    """
    objects, _, skipped = read_numbered(path)
    return objects, skipped


def read_numbered(path: str | Path) -> tuple[list[dict[str, Any]], list[int], list[dict[str, Any]]]:
    """`read_jsonl`, plus the line number of each object."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from exc
    lines = text.split("\n")
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    whole = _parse_all(numbered)
    if whole is not None:
        return whole, [lineno for lineno, _ in numbered], []
    objects: list[dict[str, Any]] = []
    at: list[int] = []
    skipped: list[dict[str, Any]] = []
    for pos, (lineno, line) in enumerate(numbered):
        try:
            obj = parse_line(line)
        except ValueError as exc:
            if 0 < pos == len(numbered) - 1:
                skipped.append(skip_last_line(path, lineno, line, exc))
                continue
            raise line_error(path, lineno, exc) from exc
        objects.append(obj)
        at.append(lineno)
    return objects, at, skipped


def parse_line(line: str | bytes) -> dict[str, Any]:
    """One line of a JSON-lines file as an object; ValueError when it is not one."""
    obj = orjson.loads(line)  # json.loads' values, several times faster (a simulated trace: 400k lines)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return obj


def line_error(path: str | Path, lineno: int, exc: ValueError) -> RecordError:
    """The one error for a line that `parse_line` refused, anywhere but last after whole lines."""
    return RecordError(f"{path}:{lineno}: not a JSON object: {exc}")


def skip_last_line(path: str | Path, lineno: int, line: str | bytes, exc: ValueError) -> dict[str, Any]:
    """Warn that a bad last line after whole ones (a crash mid-write) was skipped; returns its description."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    warnings.warn(
        f"{path}: skipped unparseable last line {lineno} (truncated by a crash?)", TruncatedLineWarning, stacklevel=4
    )
    return {"path": str(path), "line": lineno, "reason": str(exc), "text": text[:80]}


def _parse_all(numbered: list[tuple[int, str]]) -> list[dict[str, Any]] | None:
    """Every line parsed in one call, as one JSON array (a 400k-line trace in half the time of a call per
    line); None when any line is not a JSON object, so the line-by-line reading can name it."""
    try:
        objects = orjson.loads("[" + ",".join(line for _, line in numbered) + "]")
    except ValueError:
        return None
    if len(objects) != len(numbered) or not all(type(obj) is dict for obj in objects):
        return None  # a line that is not exactly one object
    return objects


def load_records(path: str | Path) -> pd.DataFrame:
    """`records_frame` of a `records.jsonl`; a truncated last line is skipped, warned about and
    listed in `frame.attrs["skipped_lines"]` (the summary turns it into a validity flag). A field of the
    wrong type is a RecordError naming the file, the line and the field.
    Read by pyarrow where it can (`harness.metrics.arrow.parse_records`); a file it cannot read is read here
    line by line, which names what is wrong."""
    from harness.metrics.arrow import ARROW_ERRORS, parse_records  # pyarrow: only when a file is read

    try:
        with collector_paused():  # a list per record and a float per token: nothing for a collection to free
            frame, flat, counts = parse_records(Path(path))
            ends = np.cumsum(counts).tolist()
            values = flat.tolist()
            frame["token_times"] = [values[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    except (*ARROW_ERRORS, RowError, UnicodeError):  # the line-by-line reader names the line and field
        return _load(path, records_frame)
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from exc
    names = list(RECORD_COLUMNS)
    frame = frame[names + [c for c in frame.columns if c not in names]]
    frame.attrs["skipped_lines"] = []
    return frame


def load_steps(path: str | Path, *, id_lists: bool = True) -> pd.DataFrame:
    """`steps_frame` of a `steps.jsonl`, with the same truncated-last-line tolerance as `load_records`.
    `id_lists=False`: without the id lists and decisions, which no metric reads (`harness.metrics.arrow.
    ID_LISTS`, each cell an empty tuple), read by pyarrow in a fraction of the time; a trace pyarrow cannot
    read is read here in full, so what is wrong with it is named the same way."""
    if not id_lists:
        from harness.metrics.arrow import ARROW_ERRORS, parse_step_counts  # pyarrow: only when a trace is read

        try:
            frame = parse_step_counts(Path(path))
        except (*ARROW_ERRORS, RowError):  # the full reader names the line and field
            pass
        except OSError as exc:
            raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from exc
        else:
            frame.attrs["skipped_lines"] = []
            return frame
    return _load(path, steps_frame)


def _load(path: str | Path, make: Any) -> pd.DataFrame:
    with collector_paused():  # millions of dicts and lists, no cycle: a collection would re-scan them all
        objects, lines, skipped = read_numbered(path)
        try:
            frame = make(objects)
        except RowError as exc:
            raise RecordError(f"{path}:{lines[exc.row] if exc.row < len(lines) else '?'}: {exc.what}") from None
        except RecordError as exc:
            raise RecordError(f"{path}: {exc}") from None
    frame.attrs["skipped_lines"] = skipped
    return frame


def list_lengths(column: pd.Series | np.ndarray) -> np.ndarray:
    """How many items each cell of a column of lists (or tuples) holds, as int64."""
    # over the column's array of lists: iterating the Series itself, or `map(len)`, takes two to three times as long
    return np.fromiter(map(len, _lists(column)), dtype=np.int64, count=len(column))


def _lists(column: pd.Series | np.ndarray) -> np.ndarray:
    return column.to_numpy() if isinstance(column, pd.Series) else column


def flatten_token_times(token_times: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """All token times of a column of lists as one flat array, plus the row position each came from.

    One pass with `np.fromiter` keeps 100k requests x hundreds of tokens fast and memory-light.
    """
    lengths = list_lengths(token_times)
    total = int(lengths.sum())
    flat = np.fromiter(chain.from_iterable(_lists(token_times)), dtype=np.float64, count=total)
    owner = np.repeat(np.arange(len(token_times), dtype=np.int64), lengths)
    return flat, owner
