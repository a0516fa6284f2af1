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

import pandas as pd

from engines.step_record import StepRecord
from harness.records import RequestRecord

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
    return list(value)


def typed(frame: pd.DataFrame, columns: tuple[Column, ...], skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """`frame` with every column present and typed as its kind says (in place; returned for chaining)."""
    for c in columns:
        if c.name in skip:
            continue
        if c.name not in frame.columns:
            frame[c.name] = c.absent
        col = frame[c.name]
        if c.kind in ("float", "count"):
            frame[c.name] = pd.to_numeric(col, errors="raise").astype("float64")
        elif c.kind == "int":
            frame[c.name] = pd.to_numeric(col.fillna(c.absent)).astype("int64")
        elif c.kind == "bool":
            frame[c.name] = col.fillna(c.absent).astype(bool)
        elif c.kind == "text":
            frame[c.name] = (col if c.absent is None else col.fillna(c.absent)).astype("str")
        elif c.kind == "floats":
            frame[c.name] = [[float(v) for v in _list(x)] for x in col]
        else:
            frame[c.name] = [_list(x) for x in col]
    return frame
