"""Trace readers: bundled traces and files users bring, all into the one workload table (imports only
`workloads`).

`read_trace(path)` tells the format from the extension and the header (Azure 2023/2024, BurstGPT, Mooncake,
batchmark's canonical columns); other CSV / JSONL files need a column mapping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from workloads.errors import WorkloadError
from workloads.readers.raw import RawTable, read_csv_raw, read_jsonl_raw
from workloads.readers.schemas import CANONICAL, FORMATS, KNOWN_FORMATS, ColumnMap, sniff, user_column_map
from workloads.readers.servegen import dataset_path, is_servegen_trace, read_servegen
from workloads.readers.validate import build_frame

SERVEGEN_NOTE = (
    "ServeGen publishes distributions, not requests: these were drawn from them (seeded; input and output "
    "lengths independently)"
)
EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}


@dataclass(frozen=True)
class TraceTable:
    """A trace read into the one workload table, with its format, column mapping and hash."""

    frame: pd.DataFrame  # shared by the cache: treat as read-only
    notes: tuple[str, ...]
    format: str
    columns: ColumnMap
    sha256: str
    class_sources: dict[str, str] = field(default_factory=dict)  # `Workload.class_sources`

    def source_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"format": self.format, "sha256": self.sha256}
        if self.format in ("csv", "jsonl"):
            spec.update(self.columns.to_spec())
        return spec


def read_trace(
    path: str | Path,
    format: str = "auto",
    columns: Mapping[str, Any] | None = None,
    time_unit: str | None = None,
    display: str | None = None,
) -> TraceTable:
    """Read any supported trace; `display` is how errors name the file (default: the path as given)."""
    path = Path(path)
    display = display or str(path)
    if format not in FORMATS:
        raise WorkloadError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}", field="format")
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in (columns or {}).items()))
    try:
        stat = path.stat()
    except OSError:
        stat = None  # read_text reports it with the file name
    key = (str(path.resolve()), stat.st_mtime_ns if stat else 0, stat.st_size if stat else 0)
    return _read_cached(key, str(path), display, format, frozen, time_unit)


def read_azure(path: str | Path) -> TraceTable:
    """Azure LLM inference traces: the 2023 code/conv files and the 2024 week-long files."""
    return read_trace(path, format="azure")


def read_burstgpt(path: str | Path) -> TraceTable:
    """BurstGPT: rows with 0 response tokens (failed requests) are dropped and counted in a note."""
    return read_trace(path, format="burstgpt")


def read_mooncake(path: str | Path) -> TraceTable:
    return read_trace(path, format="mooncake")


@lru_cache(maxsize=16)
def _read_cached(
    key: tuple[str, int, int],
    path: str,
    display: str,
    format: str,
    columns: tuple[tuple[str, Any], ...],
    time_unit: str | None,
) -> TraceTable:
    kind = _file_kind(Path(path), display, format)
    if kind == "servegen":  # two files of distributions, drawn into requests
        raw = read_servegen(Path(path), display)
        name, cmap = "servegen", CANONICAL.present(raw.header)
        frame, notes, sources = build_frame(raw, cmap, display)
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()  # the dataset's bytes: in the fingerprint
        return TraceTable(frame, (*notes, SERVEGEN_NOTE), name, cmap, digest, sources)
    raw = read_csv_raw(Path(path), display) if kind == "csv" else read_jsonl_raw(Path(path), display)
    name, cmap = _column_map(raw, kind, display, format, dict(columns), time_unit)
    frame, notes, sources = build_frame(raw, cmap, display)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return TraceTable(frame, tuple(notes), name, cmap, digest, sources)


def _file_kind(path: Path, display: str, format: str) -> str:
    if format in KNOWN_FORMATS:
        return KNOWN_FORMATS[format][1]
    if format in ("csv", "jsonl"):
        return format
    if path.is_dir():
        raise WorkloadError("is a directory, not a trace file", file=display, field="file")
    if format == "auto" and is_servegen_trace(path) and dataset_path(path).is_file():
        return "servegen"
    kind = EXTENSIONS.get(path.suffix.lower())
    if kind is None:
        if not path.exists():
            raise WorkloadError("no such file, bundled trace or preset", file=display, field="file")
        raise WorkloadError(
            f"cannot tell the format from the extension {path.suffix or '(none)'!r}; use .csv or .jsonl, or "
            f"give a format ({', '.join(FORMATS[1:])})",
            file=display,
            line=1,
            field="format",
        )
    return kind


def _column_map(
    raw: RawTable, kind: str, display: str, format: str, columns: dict[str, Any], time_unit: str | None
) -> tuple[str, ColumnMap]:
    if columns:
        return kind, user_column_map(columns, time_unit)
    if format in KNOWN_FORMATS:
        return format, KNOWN_FORMATS[format][0].present(raw.header)
    found = sniff(raw.header, kind)
    if found is None:
        raise WorkloadError(
            f"not a known {kind.upper()} trace layout (found {', '.join(raw.header)}); give a column mapping "
            "for arrival, input_tokens and output_tokens",
            file=display,
            line=raw.header_line,
            field="columns",
        )
    return found
