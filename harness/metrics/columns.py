"""Table columns derived from a record dataclass, so each record kind's schema is written once.

`RequestRecord` (harness/records.py) and `StepRecord` (engines/step_record.py) are the schemas; a `Column`
says how a reader types one field, from its annotation and metadata:

| annotation | kind | pandas dtype | a missing key reads as |
|---|---|---|---|
| `int` | int | int64 | the `absent` metadata, else 0 |
| `int \\| None` | count | float64 (NaN: not reported) | NaN |
| `float`, `float \\| None` | float | float64 | NaN |
| `bool` | bool | bool | False |
| `str` / `str \\| None` | text | str | the `absent` metadata, else "" / missing |
| `list[float]` | floats | a list per row | [] |
| `list[str]` | texts | a list per row | [] |
| `list[dict]` | objects | a list per row | [] |
"""

from __future__ import annotations

import math
import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.arrays import ArrowStringArray

from engines.step_record import StepRecord
from harness.records import RecordError, RequestRecord

# annotation -> (kind, what a missing key reads as when the field says nothing else)
_KINDS: dict[str, tuple[str, Any]] = {
    "int": ("int", 0),
    "int | None": ("count", None),
    "float": ("float", None),
    "float | None": ("float", None),
    "bool": ("bool", False),
    "str": ("text", ""),
    "str | None": ("text", None),
    "list[float]": ("floats", None),
    "list[str]": ("texts", None),
    "list[dict[str, Any]]": ("objects", None),
}


@dataclass(frozen=True)
class Column:
    """How a reader types one field of a record schema."""

    name: str
    kind: str  # int, count, float, bool, text, floats, texts or objects
    required: bool  # a row without it is not a record of this kind
    absent: Any  # what a missing key reads as (before typing)


def columns_of(cls: type) -> tuple[Column, ...]:
    """The columns of a record dataclass, in field order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        text = str(hints[f.name]).replace("typing.", "").replace("<class '", "").replace("'>", "")
        if text not in _KINDS:
            raise TypeError(f"{cls.__name__}.{f.name}: no column kind for {text}")
        kind, empty = _KINDS[text]
        required = bool(f.metadata.get("required"))
        absent = None if required else f.metadata.get("absent", f.default if f.default is not MISSING else empty)
        out.append(Column(f.name, kind, required, absent))
    return tuple(out)


REQUEST_RECORD_COLUMNS = columns_of(RequestRecord)
STEP_RECORD_COLUMNS = columns_of(StepRecord)


def _list(value: Any) -> list[Any]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if not isinstance(value, list | tuple):
        raise TypeError(f"not a list: {value!r}")
    return list(value)


_NUMBERS = {int, float}  # exact types: bool is its own type, so True is not taken for 1


def _floats(value: Any) -> list[float]:
    items = _list(value)
    kinds = set(map(type, items))  # one C-speed pass: a simulated hour holds millions of token times
    if kinds <= _NUMBERS:
        return items if int not in kinds else [float(v) for v in items]
    out = []
    for v in items:  # subclasses (numpy's float64) are numbers too; anything else is named
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise TypeError(f"not a number: {v!r}")
        out.append(float(v))
    return out


class RowError(RecordError):
    """One row of a record table has a field of the wrong type; `row` is its position, `what` the problem."""

    def __init__(self, row: int, what: str) -> None:
        super().__init__(f"record {row + 1}: {what}")
        self.row = row
        self.what = what


KIND_TEXT = {
    "int": "an integer",
    "count": "a count or null",
    "float": "a number or null",
    "bool": "true or false",
    "text": "a string",
    "floats": "a list of numbers",
    "texts": "a list",
    "objects": "a list",
}
_CONVERSION_ERRORS = (TypeError, ValueError, OverflowError, UnicodeError)


# kind -> the dtype a column of that kind is returned in, when it already has it unchanged
_SETTLED = {
    "float": np.dtype("float64"),
    "count": np.dtype("float64"),
    "int": np.dtype("int64"),
    "bool": np.dtype("bool"),
}


def _convert(c: Column, col: pd.Series) -> Any:
    # A column pandas already holds as numbers (or booleans) cannot hide a string, list or object: only
    # object columns are checked value by value (a 400k-step trace has millions of values).
    numeric = col.dtype.kind in "iuf"
    if col.dtype == _SETTLED.get(c.kind):
        return col  # already what this kind reads as: no copy (a gate judges hundreds of small runs)
    if c.kind in ("float", "count"):
        if not numeric and col.map(lambda v: isinstance(v, bool | list | dict)).any():
            raise TypeError("a boolean, list or object where a number belongs")
        return pd.to_numeric(col, errors="raise").astype("float64")
    if c.kind == "int":
        if col.dtype.kind in "i":
            return col.astype("int64")
        if not numeric and col.map(lambda v: isinstance(v, bool | list | dict | str)).any():
            raise TypeError("not an integer")
        values = pd.to_numeric(col.fillna(c.absent))
        if (values != values.round()).any() or (values.abs() >= 2**63).any():
            raise ValueError("not an integer in range")
        return values.astype("int64")
    if c.kind == "bool":
        if col.dtype.kind == "b":
            return col
        if col.map(lambda v: v is not None and not isinstance(v, bool) and v == v).any():
            raise TypeError("not true or false")
        return col.fillna(c.absent).astype(bool)
    if c.kind == "text":
        values = (col if c.absent is None else col.fillna(c.absent)).astype("str")
        _check_unicode(values)
        return values
    if c.kind == "floats":
        return [_floats(x) for x in col]
    return [x if type(x) is list else _list(x) for x in col]  # parsed JSON lists are taken as they are


def _check_unicode(values: pd.Series) -> None:
    """Raise UnicodeError where a value of the text column `values` is not valid text: a lone surrogate
    ("\ud800" in the JSON) breaks every writer."""
    if isinstance(values.array, ArrowStringArray):
        # UTF-8 bytes (pandas' own strings, as pyarrow's reader leaves them): valid ones cannot hold a surrogate,
        # and pyarrow checks them in place (200,000 values: 2 ms, against 80 ms for decoding each to Python)
        try:
            pa.array(values.array).validate(full=True)
        except pa.ArrowInvalid as exc:
            raise UnicodeError(str(exc)) from None
        return
    # Python strings: one encode of the column's text joined is a tenth of the time of one per value
    "".join([v for v in values.tolist() if isinstance(v, str)]).encode("utf-8")  # missing: NaN, skipped


def _first_bad(c: Column, col: pd.Series) -> tuple[int, Any]:
    for row, value in enumerate(col):
        try:
            _convert(c, pd.Series([value], dtype=object))
        except _CONVERSION_ERRORS:
            return row, value
    return 0, col.iloc[0] if len(col) else None


def _absent(c: Column, index: pd.Index) -> pd.Series:
    """The column a frame without field `c` reads as: every row `c.absent`, numbers already in their dtype."""
    if c.kind in ("float", "count"):
        return pd.Series(np.full(len(index), np.nan if c.absent is None else float(c.absent)), index=index)
    if c.kind == "int":
        return pd.Series(np.full(len(index), int(c.absent), dtype=np.int64), index=index)
    if c.kind == "bool":
        return pd.Series(np.full(len(index), bool(c.absent)), index=index)
    return pd.Series(c.absent, index=index, dtype=object if c.absent is None else None)


def with_absent(frame: pd.DataFrame, columns: tuple[Column, ...]) -> pd.DataFrame:
    """`frame` and, after its own, every optional column it lacks, as `typed` would add it: in one step
    (adding twenty columns one at a time costs more than typing them all, on the small runs a gate judges)."""
    absent = {c.name: _absent(c, frame.index) for c in columns if not c.required and c.name not in frame.columns}
    if not absent or frame.empty:
        return frame
    return pd.concat([frame, pd.DataFrame(absent, index=frame.index)], axis=1)


def typed(frame: pd.DataFrame, columns: tuple[Column, ...], skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """`frame` with every column present and typed as its kind says (in place; returned for chaining).

    A value of the wrong type raises RowError naming the row and the field, never a pandas traceback."""
    for c in columns:
        if c.name in skip:
            continue
        if c.name not in frame.columns:
            frame[c.name] = c.absent if c.required else _absent(c, frame.index)
            if not c.required and c.kind in _SETTLED:
                continue  # made in its final dtype, with nothing a value could get wrong
        try:
            column = frame[c.name]
            converted = _convert(c, column)
            if converted is not column:
                frame[c.name] = converted
        except _CONVERSION_ERRORS:
            row, value = _first_bad(c, frame[c.name])
            shown = repr(value).encode("ascii", "backslashreplace").decode()[:60]
            raise RowError(row, f"{c.name}: expected {KIND_TEXT[c.kind]}, found {shown}") from None
        if c.required and frame[c.name].isna().any():
            row = int(frame[c.name].isna().to_numpy().argmax())
            raise RowError(row, f"{c.name}: missing (every record needs it)")
    return frame
