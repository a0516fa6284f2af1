"""pyarrow readers of the two record kinds, typed from their dataclasses (via `harness.metrics.columns`)
exactly as the pandas readers in `harness.metrics.frame` type them.

pyarrow's reader parses JSON lines in C++ on every core, several times faster than one Python dict per
line: a simulated hour's step trace (400,000 lines, 280 MB) loads in seconds instead of tens of them, and
its 38,732 request records with their token times (171 MB) in 2.2-2.4 s instead of 4.9-5.7. It cannot type a list
of objects, so a step trace's decisions are not read here, nor the id lists that no metric reads
(`ID_LISTS`); `preempted` is (preemptions are counted). Anything it refuses raises `pa.ArrowInvalid` (or
`ArrowNotImplementedError`), and the caller falls back to the pandas reader, which names the line and
field at fault. pyarrow takes two numbers that reader refuses, NaN and Infinity (JSON has neither): a
file where it found one is left to that reader too.
"""

from __future__ import annotations

import io
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from harness.metrics.columns import REQUEST_RECORD_COLUMNS, STEP_RECORD_COLUMNS, Column, typed

_TYPES = {
    "int": pa.int64(),
    "count": pa.float64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "floats": pa.list_(pa.float64()),
    "texts": pa.list_(pa.string()),
}
_BLOCK = 16 << 20
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError)

# The step columns this reader does not read; it fills each of their cells with an empty tuple.
ID_LISTS = ("running_ids", "admitted", "finished", "decisions")


def arrow_schema(columns: tuple[Column, ...], skip: tuple[str, ...] = ()) -> pa.Schema:
    """The schema of `columns` minus `skip` (a list of objects has no arrow type: skip it)."""
    return pa.schema([(c.name, _TYPES[c.kind]) for c in columns if c.name not in skip])


STEP_SCHEMA = arrow_schema(STEP_RECORD_COLUMNS, skip=ID_LISTS)
RECORD_SCHEMA = arrow_schema(REQUEST_RECORD_COLUMNS)


# The tables of the files read last, by their content and how they were read: a run's metrics read its
# records.jsonl and its report reads the same file again in the same process (`batchmark run`), a second
# parse of 90 MB for nothing. A table is immutable, so the two readers can share one. The key is the bytes'
# CRC-32 and length, not the file's modification time, which a rewrite within the clock's tick would not move.
_TABLES: OrderedDict[tuple[Any, ...], pa.Table] = OrderedDict()
KEPT_TABLES = 2  # at least: a run's records and one step trace
# and more while they take no more memory than this: a run of several engines has a step trace for each, all
# read by its metrics before its report reads the first again (two engines of 100,000 requests: 110 MB in all)
KEPT_BYTES = 256 << 20


def read_json_lines(source: Path | io.BytesIO, schema: pa.Schema | None, unexpected: str = "ignore") -> pa.Table:
    """JSON lines into a table of `schema`'s columns, missing keys null and other keys handled as
    `unexpected` says ("ignore", "error" or "infer"); schema None: every column, types inferred. A file's
    bytes read the same way as one of the tables kept (`KEPT_TABLES`, `KEPT_BYTES`) are not parsed again."""
    # from bytes read at once: a fifth faster than pyarrow reading the path itself (280 MB, 1.0 s against 1.3)
    data = source.getvalue() if isinstance(source, io.BytesIO) else source.read_bytes()
    key = None
    if isinstance(source, Path):  # bytes in memory (a sample of a trace) are not kept
        key = (
            str(source.resolve()),
            len(data),
            zlib.crc32(data),
            None if schema is None else schema.to_string(),
            unexpected,
        )
        if key in _TABLES:
            _TABLES.move_to_end(key)
            return _TABLES[key]
    parse = (
        pj.ParseOptions()
        if schema is None
        else pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior=unexpected)
    )
    table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=_BLOCK), parse_options=parse)
    if any(_left_to_pandas(column) for column in table.columns):  # the pandas reader names the line
        raise pa.ArrowInvalid("NaN or Infinity (JSON has neither), or a nested field of no schema")
    if key is not None:
        _TABLES[key] = table
        while len(_TABLES) > KEPT_TABLES and sum(kept.nbytes for kept in _TABLES.values()) > KEPT_BYTES:
            _TABLES.popitem(last=False)
    return table


def _left_to_pandas(column: pa.ChunkedArray) -> bool:
    """Whether pyarrow read a NaN or Infinity into `column` (RapidJSON's extensions: JSON has no way to write
    either), or `column` is nested in a way no schema's is (a field no schema knows: the pandas reader
    keeps it as Python objects)."""
    kind = column.type
    if pa.types.is_list(kind):
        if not pa.types.is_floating(kind.value_type):
            return not (pa.types.is_string(kind.value_type) or pa.types.is_integer(kind.value_type))
        column = pa.chunked_array([chunk.flatten() for chunk in column.chunks], kind.value_type)
    elif pa.types.is_nested(kind):
        return True
    elif not pa.types.is_floating(kind):
        return False
    return bool(pc.any(pc.invert(pc.is_finite(column))).as_py())


def parse_records(source: Path | io.BytesIO) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """records.jsonl as (the frame `harness.metrics.records_frame` makes, but without its `token_times`
    column; every token time in one flat array, record after record; how many each record has). Fields of
    no `RequestRecord` column are kept as pyarrow infers them, after the others.
    Raises an `ARROW_ERRORS` error where the pandas reader must judge: a line pyarrow cannot parse or type,
    a null among the token times, or a record without a required field (the pandas reader names it)."""
    table = read_json_lines(source, RECORD_SCHEMA, unexpected="infer")
    times = table.column("token_times").combine_chunks()
    flat = times.flatten()  # the values the lists hold (a list array's own offsets may skip some)
    counts = pc.fill_null(times.value_lengths(), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if flat.null_count or len(flat) != counts.sum():
        raise pa.ArrowInvalid("a null token time")
    frame = table.drop_columns(["token_times"]).to_pandas()
    if any(frame[c.name].isna().any() for c in REQUEST_RECORD_COLUMNS if c.required):
        raise pa.ArrowInvalid("a record without a required field")
    typed(frame, REQUEST_RECORD_COLUMNS, skip=("token_times",))
    return frame, flat.to_numpy(zero_copy_only=False).astype(np.float64, copy=False), counts


def parse_step_counts(source: Path | io.BytesIO) -> pd.DataFrame:
    """A step trace as `harness.metrics.steps_frame` types it, but each `ID_LISTS` cell an empty tuple
    (and each `preempted` cell a tuple).
    Raises an `ARROW_ERRORS` error where the pandas reader must judge: a line pyarrow cannot parse or
    type, or a required field that no line has (the pandas reader names it)."""
    table = read_json_lines(source, STEP_SCHEMA)
    if table.num_rows and any(
        table.column(c.name).null_count == table.num_rows for c in STEP_RECORD_COLUMNS if c.required
    ):
        raise pa.ArrowInvalid("a required step field is in no line")
    preempted = table.column("preempted")
    counts = pc.fill_null(pc.list_value_length(preempted), 0).to_numpy(zero_copy_only=False)
    frame = table.drop_columns(["preempted"]).to_pandas()
    ids: list[tuple[str, ...]] = [()] * len(frame)  # a tuple per cell, as for the lists not read
    for i in np.flatnonzero(counts).tolist():  # most steps preempt nothing
        ids[i] = tuple(preempted[i].as_py())
    frame["preempted"] = ids
    typed(frame, STEP_RECORD_COLUMNS, skip=(*ID_LISTS, "preempted"))
    for name in ID_LISTS:
        frame[name] = [()] * len(frame)
    return frame[[c.name for c in STEP_RECORD_COLUMNS]]  # the columns in `StepRecord` order
