"""Raw columns -> the workload table, checked field by field.

Checks are vectorised; on failure the first bad row is looked up so the error names its line and field.
Rows that parse but cannot be served (0 input or 0 output tokens) are dropped and reported in a note.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from workloads.errors import WorkloadError
from workloads.frame import make_frame, sort_by_arrival
from workloads.options import MAX_SPAN_S, MAX_TOKENS
from workloads.readers.raw import MISSING, RawTable
from workloads.readers.schemas import TIME_UNITS, ColumnMap

MAX_PRIORITY = 2**31  # priorities are small integers; beyond this a value is a typo


class Checker:
    """Knows the file and the line of every row, so any check can fail with a precise one-line error."""

    def __init__(self, raw: RawTable, display: str) -> None:
        self.raw = raw
        self.display = display

    def fail(self, row: int, field: str, what: str) -> WorkloadError:
        return WorkloadError(what, file=self.display, line=self.raw.lines[row], field=field)

    def column(self, name: str) -> list[Any] | np.ndarray:
        if name not in self.raw.columns:
            have = ", ".join(self.raw.header) or "nothing"
            raise WorkloadError(
                f"missing column (the file has: {have})", file=self.display, line=self.raw.header_line, field=name
            )
        values = self.raw.columns[name]
        if self.raw.typed:
            for row, value in enumerate(values):
                if value is MISSING:
                    raise self.fail(row, name, "missing field")
        return values

    def numbers(self, name: str) -> np.ndarray:
        values = self.column(name)
        series = pd.Series(values, dtype=object)
        parsed = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(parsed)
        if self.raw.typed:  # JSON true would pass as 1
            bad |= series.map(lambda v: isinstance(v, bool) or v is None).to_numpy(bool)
        if bad.any():
            row = int(np.argmax(bad))
            shown = values[row]
            raise self.fail(row, name, "empty value" if shown in ("", None) else f"not a number: {shown!r}")
        return parsed

    def counts(self, name: str, allow_negative: bool = False) -> np.ndarray:
        parsed = self.numbers(name)
        fractional = parsed != np.floor(parsed)
        if fractional.any():
            row = int(np.argmax(fractional))
            raise self.fail(row, name, f"not a whole number: {self.raw.columns[name][row]!r}")
        negative = parsed < 0
        if negative.any() and not allow_negative:
            row = int(np.argmax(negative))
            raise self.fail(row, name, f"negative token count: {self.raw.columns[name][row]!r}")
        # before the cast: 99999999999999999999999 became -9.2e18 in int64 and passed the negative check
        limit = MAX_PRIORITY if allow_negative else MAX_TOKENS
        huge = np.abs(parsed) > limit
        if huge.any():
            row = int(np.argmax(huge))
            raise self.fail(row, name, f"{self.raw.columns[name][row]!r} is beyond {limit:,}")
        return parsed.astype(np.int64)

    def arrivals(self, name: str, unit: str) -> np.ndarray:
        scale = TIME_UNITS[unit]
        if scale is not None:
            seconds = self.numbers(name) * scale
            # a span beyond any trace (1e308) overflows every later difference and count of arrivals
            huge = ~(np.abs(seconds - seconds.min()) <= MAX_SPAN_S)
            if huge.any():
                row = int(np.argmax(huge))
                shown = self.raw.columns[name][row]
                raise self.fail(row, name, f"{shown!r} is beyond {MAX_SPAN_S:.0f} s from the first arrival")
            return seconds
        values = self.column(name)
        not_text = [i for i, v in enumerate(values) if not isinstance(v, str)] if self.raw.typed else []
        if not_text:
            raise self.fail(not_text[0], name, f"expected a date-time string, found {values[not_text[0]]!r}")
        stamps = pd.to_datetime(pd.Series(values, dtype=object), format="ISO8601", utc=True, errors="coerce")
        bad = stamps.isna().to_numpy()
        if bad.any():
            row = int(np.argmax(bad))
            raise self.fail(row, name, f"cannot parse timestamp {values[row]!r} (expected ISO 8601)")
        return (stamps - stamps.min()).dt.total_seconds().to_numpy(dtype=np.float64)

    def texts(self, name: str) -> list[str | None]:
        values = self.column(name)
        for row, value in enumerate(values if self.raw.typed else ()):
            if value is not None and not isinstance(value, str):
                raise self.fail(row, name, f"expected text, found {value!r}")
        return [v if v else None for v in values]

    def classes(self, name: str) -> tuple[list[str | None], dict[str, str]]:
        """The SLO class of each row (None where empty), and where each class is first named."""
        names = [v.strip() if isinstance(v, str) and v.strip() else None for v in self.texts(name)]
        sources: dict[str, str] = {}
        for row, value in enumerate(names):
            if value is not None and value not in sources:
                sources[value] = f"{self.display}:{self.raw.lines[row]}: {name}"
        return names, sources

    def tenants(self, names: tuple[str, ...]) -> list[str]:
        parts = [[str(v).strip() if v is not None else "" for v in self.column(n)] for n in names]
        return ["/".join(p for p in row if p) or "default" for row in zip(*parts, strict=True)]

    def hash_ids(self, name: str) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        for row, value in enumerate(self.column(name)):
            ids = value
            if isinstance(value, str):  # CSV: "[1, 2, 3]" or "1 2 3"
                try:
                    ids = json.loads(value) if value.strip().startswith("[") else [int(v) for v in value.split()]
                except ValueError:
                    raise self.fail(row, name, f"expected a list of integers, found {value!r}") from None
            if not isinstance(ids, list) or not set(map(type, ids)) <= {int}:  # bool is not int here
                raise self.fail(row, name, f"expected a list of integers, found {value!r}")
            out.append(tuple(ids))
        return out


def build_frame(raw: RawTable, cmap: ColumnMap, display: str) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """The table, notes on what was dropped or sorted, and where each SLO class the file names is first named."""
    check = Checker(raw, display)
    for name in cmap.required():
        check.column(name)  # report a missing column before any bad value
    if not raw.lines:
        raise WorkloadError(
            "no requests: the file has a header but no rows", file=display, line=raw.header_line + 1, field="file"
        )
    arrival = check.arrivals(cmap.arrival, cmap.time_unit)
    classes, sources = check.classes(cmap.slo_class) if cmap.slo_class else (None, {})
    frame = make_frame(
        arrival - arrival.min(),
        check.counts(cmap.input_tokens),
        check.counts(cmap.output_tokens),
        tenant=check.tenants(cmap.tenant) if cmap.tenant else "default",
        priority=check.counts(cmap.priority, allow_negative=True) if cmap.priority else 0,
        prompt_text=check.texts(cmap.prompt_text) if cmap.prompt_text else None,
        prefix_hash_ids=check.hash_ids(cmap.prefix_hash_ids) if cmap.prefix_hash_ids else None,
        reasoning_tokens=check.counts(cmap.reasoning_tokens) if cmap.reasoning_tokens else 0,
        slo_class=classes,
    )
    notes: list[str] = []
    out_of_order = int((np.diff(arrival) < 0).sum())
    if out_of_order:
        notes.append(f"sorted by arrival: {out_of_order} rows came before an earlier timestamp in the file")
    zero_out = frame["output_tokens"] == 0
    if zero_out.any():
        notes.append(
            f"dropped {int(zero_out.sum())} rows with 0 {_label(cmap.output_tokens, 'output')} "
            f"({cmap.zero_output_reason})"
        )
    zero_in = (frame["input_tokens"] == 0) & ~zero_out
    if zero_in.any():
        notes.append(f"dropped {int(zero_in.sum())} rows with 0 {_label(cmap.input_tokens, 'input')} (an empty prompt)")
    kept = frame[~(zero_out | zero_in)]
    if kept.empty:
        raise WorkloadError(
            f"no usable requests: all {len(frame)} rows have 0 input or 0 output tokens", file=display, field="file"
        )
    kept = kept.assign(arrival_s=kept["arrival_s"] - kept["arrival_s"].min())
    return sort_by_arrival(kept), notes, sources


def _label(column: str, role: str) -> str:
    # "Response tokens" reads well as is; "GeneratedTokens" or "n_out" needs the role spelled out.
    return column.lower() if " " in column else f"{role} tokens ({column})"
