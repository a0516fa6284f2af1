"""pyarrow readers of the two record kinds, typed from their dataclasses (via `harness.metrics.columns`)
exactly as the pandas readers in `harness.metrics.frame` type them.

pyarrow's reader parses JSON lines in C++ on every core, several times faster than one Python dict per
line: a simulated hour's step trace (400,000 lines, 280 MB) loads in seconds instead of tens of them. It
cannot type a list of objects, so a step trace's decisions are not read here, nor the id lists that no
metric reads (`ID_LISTS`); `preempted` is (preemptions are counted). Anything it refuses raises
`pa.ArrowInvalid` (or `ArrowNotImplementedError`), and the caller falls back to the pandas reader,
which names the line and field at fault.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from harness.metrics.columns import STEP_RECORD_COLUMNS, Column, typed

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


def read_json_lines(source: Path | io.BytesIO, schema: pa.Schema | None, unexpected: str = "ignore") -> pa.Table:
    """JSON lines into a table of `schema`'s columns, missing keys null and other keys handled as
    `unexpected` says ("ignore", "error" or "infer"); schema None: every column, types inferred."""
    parse = (pj.ParseOptions() if schema is None
             else pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior=unexpected))  # fmt: skip
    return pj.read_json(source, read_options=pj.ReadOptions(block_size=_BLOCK), parse_options=parse)


def parse_step_counts(source: Path | io.BytesIO) -> pd.DataFrame:
    """A step trace as `harness.metrics.steps_frame` types it, but each `ID_LISTS` cell an empty tuple
    (and each `preempted` cell a tuple).
    Raises an `ARROW_ERRORS` error where the pandas reader must judge: a line pyarrow cannot parse or
    type, or a required field that no line has (the pandas reader names it)."""
    table = read_json_lines(source, STEP_SCHEMA)
    if table.num_rows and any(table.column(c.name).null_count == table.num_rows for c in STEP_RECORD_COLUMNS
                              if c.required):  # fmt: skip
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
