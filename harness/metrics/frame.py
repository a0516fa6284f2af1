"""Record and step-trace tables: the only module that knows the on-disk shape (JSON lines).

Everything downstream works on the DataFrames built here, so column names and dtypes are fixed
in one place: times are float64 seconds (NaN when absent), optional counts are float64 (NaN when
the engine did not report them), text columns are pandas strings, list columns hold Python lists.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import fields
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessInputError
from harness.records import RequestRecord

RECORD_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(RequestRecord))
RECORD_TIME_COLUMNS = ("t_scheduled", "t_sent", "t_admitted", "t_first_token", "t_finish")
_RECORD_INT_COLUMNS = ("priority", "max_tokens", "prompt_tokens", "output_tokens", "preemptions", "trial")
# The engine's own counts may be missing (failed before its finish event); NaN keeps that visible.
_RECORD_OPTIONAL_COUNTS = ("engine_prompt_tokens", "engine_output_tokens", "user")
_RECORD_TEXT_COLUMNS = ("request_id", "engine", "tenant", "finish_reason", "error_type", "error_message")
_RECORD_DEFAULTS: dict[str, Any] = {
    "engine": "",
    "tenant": "default",
    "priority": 0,
    "max_tokens": 0,
    "ignore_eos": False,
    "prompt_tokens": 0,
    "output_tokens": 0,
    "preemptions": 0,
    "trial": 0,
}
_RECORD_REQUIRED = ("request_id", "t_scheduled", "t_sent")

STEP_COLUMNS: tuple[str, ...] = (
    "step",
    "t_start",
    "t_end",
    "phase",
    "running_ids",
    "num_running",
    "max_slots",
    "tokens_computed",
    "padded_tokens",
    "idle_slots",
    "admitted",
    "finished",
    "preempted",
    "waiting",
    "blocked_reason",
    "kv_blocks_used",
    "kv_blocks_total",
)
_STEP_LIST_COLUMNS = ("running_ids", "admitted", "finished", "preempted")
_STEP_INT_COLUMNS = (
    "step",
    "num_running",
    "max_slots",
    "tokens_computed",
    "padded_tokens",
    "idle_slots",
    "waiting",
    "kv_blocks_used",
    "kv_blocks_total",
)


class TruncatedLineWarning(UserWarning):
    """The last line of a JSON-lines file did not parse (a run that crashed mid-write); it was skipped."""


def _as_dict(row: Mapping[str, Any] | RequestRecord) -> Mapping[str, Any]:
    if isinstance(row, RequestRecord):
        return row.to_json()
    if isinstance(row, Mapping):
        return row
    raise HarnessInputError(f"a record must be a dict or RequestRecord, got {type(row).__name__}")


def _float_list(value: Any) -> list[float]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [float(v) for v in value]


def _list_or_empty(value: Any) -> list[Any]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return list(value)


def records_frame(rows: Iterable[Mapping[str, Any] | RequestRecord]) -> pd.DataFrame:
    """One row per request, with every `RequestRecord` column present and typed.

    Unknown keys are kept as extra columns so a newer record schema still loads.
    """
    frame = pd.DataFrame.from_records([_as_dict(r) for r in rows])
    if frame.empty:
        frame = pd.DataFrame(columns=list(RECORD_COLUMNS))
    missing = [c for c in _RECORD_REQUIRED if c not in frame.columns]
    if missing:
        raise HarnessInputError(f"records lack required field(s): {', '.join(missing)}")
    for col in RECORD_COLUMNS:
        if col not in frame.columns:
            frame[col] = _RECORD_DEFAULTS.get(col)
    for col in RECORD_TIME_COLUMNS + _RECORD_OPTIONAL_COUNTS:
        frame[col] = pd.to_numeric(frame[col], errors="raise").astype("float64")
    for col in _RECORD_INT_COLUMNS:
        frame[col] = pd.to_numeric(frame[col].fillna(_RECORD_DEFAULTS[col])).astype("int64")
    frame["ignore_eos"] = frame["ignore_eos"].fillna(False).astype(bool)
    # Grouping by tenant or engine silently drops missing keys, so those get their defaults.
    frame["tenant"] = frame["tenant"].fillna(_RECORD_DEFAULTS["tenant"])
    frame["engine"] = frame["engine"].fillna(_RECORD_DEFAULTS["engine"])
    for col in _RECORD_TEXT_COLUMNS:
        frame[col] = frame[col].astype("str")
    if frame["request_id"].isna().any():
        raise HarnessInputError("a record has no request_id")
    frame["token_times"] = [_float_list(v) for v in frame["token_times"]]
    extra = [c for c in frame.columns if c not in RECORD_COLUMNS]
    return frame[list(RECORD_COLUMNS) + extra].reset_index(drop=True)


def steps_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per engine step with every step-trace column present and typed."""
    frame = pd.DataFrame.from_records(list(rows))
    if frame.empty:
        frame = pd.DataFrame(columns=list(STEP_COLUMNS))
    missing = [c for c in ("t_start", "t_end", "phase") if c not in frame.columns]
    if missing:
        raise HarnessInputError(f"step trace lacks required field(s): {', '.join(missing)}")
    for col in STEP_COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    for col in ("t_start", "t_end"):
        frame[col] = pd.to_numeric(frame[col]).astype("float64")
    for col in _STEP_INT_COLUMNS:
        frame[col] = pd.to_numeric(frame[col].fillna(0)).astype("int64")
    for col in _STEP_LIST_COLUMNS:
        frame[col] = [_list_or_empty(v) for v in frame[col]]
    frame["phase"] = frame["phase"].astype("str")
    frame["blocked_reason"] = frame["blocked_reason"].astype("str")
    extra = [c for c in frame.columns if c not in STEP_COLUMNS]
    return frame[list(STEP_COLUMNS) + extra].reset_index(drop=True)


def read_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Parse a JSON-lines file; returns (objects, skipped) where skipped describes a dropped last line.

    Only the last line may be bad: that is what a crash mid-write leaves. A bad line anywhere else
    means the file is corrupt, and silently dropping it would bias every metric.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarnessInputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    lines = text.split("\n")
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    objects: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for pos, (lineno, line) in enumerate(numbered):
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if pos == len(numbered) - 1:
                skipped.append({"path": str(path), "line": lineno, "reason": str(exc), "text": line[:80]})
                warnings.warn(
                    f"{path}: skipped unparseable last line {lineno} (truncated by a crash?)",
                    TruncatedLineWarning,
                    stacklevel=3,
                )
                continue
            raise HarnessInputError(f"{path}:{lineno}: not a JSON object: {exc}") from exc
        objects.append(obj)
    return objects, skipped


def load_records(path: str | Path) -> pd.DataFrame:
    """`records_frame` of a `records.jsonl`; a truncated last line is skipped, warned about and
    listed in `frame.attrs["skipped_lines"]` (the summary turns it into a validity flag)."""
    objects, skipped = read_jsonl(path)
    frame = records_frame(objects)
    frame.attrs["skipped_lines"] = skipped
    return frame


def load_steps(path: str | Path) -> pd.DataFrame:
    """`steps_frame` of a `steps.jsonl`, with the same truncated-last-line tolerance as `load_records`."""
    objects, skipped = read_jsonl(path)
    frame = steps_frame(objects)
    frame.attrs["skipped_lines"] = skipped
    return frame


def flatten_token_times(token_times: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """All token times of a column of lists as one flat array, plus the row position each came from.

    One pass with `np.fromiter` keeps 100k requests x hundreds of tokens fast and memory-light.
    """
    lengths = np.fromiter((len(v) for v in token_times), dtype=np.int64, count=len(token_times))
    total = int(lengths.sum())
    flat = np.fromiter(chain.from_iterable(token_times), dtype=np.float64, count=total)
    owner = np.repeat(np.arange(len(token_times), dtype=np.int64), lengths)
    return flat, owner
