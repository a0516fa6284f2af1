"""A JSON Lines writer for hundreds of thousands of same-shaped records: written in batches, by Arrow.

A simulated hour of continuous batching is half a million step-trace records; `json.dumps` on each
would cost more than simulating them. This writer buffers the dicts and every `batch_rows` turns
them into one Arrow array per field and formats the JSON text column-wise (numbers, strings, lists
of strings, flat dicts), falling back to `json.dumps` only for the values Arrow cannot format
exactly (nested or mixed lists, dicts with varied keys). Lines are the same JSON values
`json.dumps` would write: floats keep a decimal point or exponent and round-trip exactly; strings are
escaped by `json.dumps` whenever they hold a character JSON must escape.

Each batch is flushed when written, so an interrupted run keeps all but the last batch.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BATCH_ROWS = 32768
_NEEDS_ESCAPE = r"[^ !#-\[\]-~]"  # anything but printable ASCII less '"' and '\': json.dumps escapes it


class BatchedJsonlWriter:
    """`write(item)` per record: dicts with the same keys in the same order, or, given `fields`, objects
    whose attributes of those names are written (a dataclass record without building its dict)."""

    def __init__(self, path: Path, batch_rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.batch_rows = batch_rows
        self._fields = fields
        self._values = operator.attrgetter(*fields) if fields else None
        self._file: IO[bytes] = path.open("ab")
        self._rows: list[Any] = []
        self.count = 0

    def write(self, item: Any) -> None:
        self._rows.append(item)
        if len(self._rows) >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        rows, self._rows = self._rows, []
        if rows:
            if self._values is not None and self._fields is not None:
                text = format_columns(self._fields, list(zip(*map(self._values, rows), strict=True)))
            else:
                text = format_lines(rows)
            self._file.write(text)
            self._file.flush()
            self.count += len(rows)

    def close(self) -> None:
        self.flush()
        self._file.close()

    def __enter__(self) -> BatchedJsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def format_lines(rows: Sequence[dict[str, Any]]) -> bytes:
    """The JSON Lines text of `rows` (one object per line, keys in their order)."""
    lines = pc.binary_join_element_wise(_objects(rows), "\n", "")
    return b"".join(_bytes(chunk) for chunk in _chunks(lines))


def format_columns(names: Sequence[str], columns: Sequence[Sequence[Any]]) -> bytes:
    """The JSON Lines text of rows given column-wise: `columns[i][j]` is field `names[i]` of row j."""
    lines = pc.binary_join_element_wise(_object_text(names, columns), "\n", "")
    return b"".join(_bytes(chunk) for chunk in _chunks(lines))


def _objects(rows: Sequence[dict[str, Any]]) -> pa.Array:
    """One JSON object text per dict; column-wise when all share their keys, else json.dumps each."""
    keys = tuple(rows[0])
    if not keys or any(tuple(row) != keys for row in rows):
        return pa.array([_dumps(row) for row in rows], pa.string())
    return _object_text(keys, list(zip(*(row.values() for row in rows), strict=True)))


def _object_text(keys: Sequence[str], columns: Sequence[Sequence[Any]]) -> pa.Array:
    parts: list[Any] = []
    for i, (key, values) in enumerate(zip(keys, columns, strict=True)):
        parts.append(pa.scalar(("{" if i == 0 else ",") + json.dumps(key) + ":"))
        parts.append(_json_text(list(values)))
    return pc.binary_join_element_wise(*parts, pa.scalar("}"), "")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _json_text(values: list[Any]) -> pa.Array:
    """One JSON text per value."""
    types = set(map(type, values))
    types.discard(type(None))
    if not types:
        return pa.array(["null"] * len(values), pa.string())
    if types == {bool}:
        return pa.array(["null" if v is None else ("true" if v else "false") for v in values], pa.string())
    if types == {int}:
        return pc.fill_null(pc.cast(pa.array(values, pa.int64()), pa.string()), "null")
    if types <= {int, float}:
        return _floats(values)
    if types == {str}:
        return _strings(pa.array(values, pa.string()))
    if types == {list} and len(values) == len(values):
        flat = [x for v in values for x in v]
        if set(map(type, flat)) <= {str}:
            offsets = np.zeros(len(values) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, values), np.int64, len(values)), out=offsets[1:])
            inner = pa.LargeListArray.from_arrays(pa.array(offsets), _strings(pa.array(flat, pa.string())))
            return pc.binary_join_element_wise("[", pc.binary_join(inner, ","), "]", "")
    if types == {dict} and None not in values:
        return _objects(values)
    return pa.array(["[]" if v == [] else _dumps(v) for v in values], pa.string())


def _floats(values: list[Any]) -> pa.Array:
    floats = pa.array([None if v is None else float(v) for v in values], pa.float64())
    if pc.all(pc.is_finite(floats)).as_py() is False:
        raise ValueError("NaN or infinity has no JSON form")
    text = pc.cast(floats, pa.string())
    # Arrow writes 1.0 as "1": add the ".0" json.dumps writes, so the value stays a float when read back
    integral = pc.match_substring_regex(text, r"^-?[0-9]+$")
    text = pc.if_else(integral, pc.binary_join_element_wise(text, ".0", ""), text)
    return pc.fill_null(text, "null")


def _strings(strings: pa.Array) -> pa.Array:
    """Quoted; values with a character to escape go through json.dumps (the rest need none)."""
    escape = pc.fill_null(pc.match_substring_regex(strings, _NEEDS_ESCAPE), False)
    quoted = pc.binary_join_element_wise('"', strings, '"', "")
    if pc.any(escape).as_py():
        slow = pa.array([json.dumps(s) if e else None for s, e in zip(strings.to_pylist(), escape.to_pylist(),
                                                                     strict=True)], pa.string())  # fmt: skip
        quoted = pc.if_else(escape, slow, quoted)
    return pc.fill_null(quoted, "null")


def _chunks(array: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return array.chunks if isinstance(array, pa.ChunkedArray) else [array]


def _bytes(chunk: pa.Array) -> bytes:
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
    return memoryview(chunk.buffers()[2])[offsets[0] : offsets[-1]].tobytes()
