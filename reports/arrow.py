"""pyarrow schemas of the two record kinds, derived from their dataclasses (via `harness.metrics.columns`),
so the report's fast JSON-lines reader types every column exactly as `harness.metrics` does."""

from __future__ import annotations

import pyarrow as pa

from harness.metrics.columns import Column

_TYPES = {
    "int": pa.int64(),
    "count": pa.float64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "floats": pa.list_(pa.float64()),
    "texts": pa.list_(pa.string()),
}


def arrow_schema(columns: tuple[Column, ...], skip: tuple[str, ...] = ()) -> pa.Schema:
    """The schema of `columns` minus `skip` (a list of objects has no arrow type: skip it)."""
    return pa.schema([(c.name, _TYPES[c.kind]) for c in columns if c.name not in skip])
