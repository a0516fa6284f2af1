"""Exports: records as CSV and Parquet, metrics as versioned JSON, and the Markdown summary.

The metrics JSON (`report-metrics.json`) follows the schema in docs/report.md, identified by
`"schema": "batchmark.report-metrics"` and an integer `schema_version` (currently 1) that changes
whenever a key is renamed, removed or changes meaning; adding keys keeps the version.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from harness.metrics import jsonable, load_records
from harness.metrics.arrow import RECORD_SCHEMA, read_json_lines
from harness.records import RecordError
from reports.analysis import Analysis, analyse
from reports.load import RunData
from reports.markdown import markdown_summary

METRICS_SCHEMA = "batchmark.report-metrics"
METRICS_SCHEMA_VERSION = 1


def records_table(run_dir: Path) -> pa.Table:
    """Every record of a run directory as an Arrow table: the `RequestRecord` columns typed, unknown
    fields kept as pyarrow infers them, `token_times` a list<double> column."""
    path = Path(run_dir) / "records.jsonl"
    try:
        return read_json_lines(path, RECORD_SCHEMA, unexpected="infer")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        frame = load_records(path)  # names a corrupt line, or skips a truncated last one
        return pa.Table.from_pandas(frame, preserve_index=False)
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc}") from exc


def _csv_ready(table: pa.Table) -> pa.Table:
    """List and struct columns as JSON text (CSV has no lists): `[0.1,0.25]`."""
    for i, field in enumerate(table.schema):
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            col = table.column(i)
            texts = pc.binary_join(pc.cast(col, pa.list_(pa.string())), ",")
            joined = pc.binary_join_element_wise("[", pc.fill_null(texts, ""), "]", "")
            table = table.set_column(i, field.name, pc.if_else(pc.is_null(col), pa.scalar(None, pa.string()), joined))
        elif pa.types.is_struct(field.type) or pa.types.is_map(field.type):
            values = [None if v is None else json.dumps(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, field.name, pa.array(values, pa.string()))
    return table


def export_records(run_dir: Path, out_dir: Path) -> dict[str, Path]:
    """records.csv and records.parquet of one run directory into `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = records_table(run_dir)
    parquet, csv = out_dir / "records.parquet", out_dir / "records.csv"
    pq.write_table(table, parquet, compression="zstd")
    pcsv.write_csv(_csv_ready(table), csv)
    return {"records_parquet": parquet, "records_csv": csv}


def _version() -> str:
    try:
        return version("batchmark")
    except PackageNotFoundError:
        return "unknown"


def _run_json(run: RunData) -> dict[str, Any]:
    return {
        "label": run.label,
        "path": str(run.path),
        "workload": run.workload_name,
        "fingerprint": run.fingerprint,
        "manifest": run.manifest,
        "notes": run.notes,
        "engine_runs": [
            {
                "label": er.label,
                "engine": er.engine,
                "trial": er.trial,
                "stopped_early": er.stopped_early,
                "summary_source": er.summary_source,
                "summary": er.summary,
            }
            for er in run.engine_runs
        ],
        "repeat": (run.metrics or {}).get("repeat") or {},
    }


def metrics_document(a: Analysis) -> dict[str, Any]:
    """The report's numbers as one JSON-serialisable document (schema: docs/report.md)."""
    return jsonable(
        {
            "schema": METRICS_SCHEMA,
            "schema_version": METRICS_SCHEMA_VERSION,
            "generated_by": f"batchmark {_version()}",
            "runs": [_run_json(run) for run in a.runs],
            "series": a.labels,
            "headlines": [
                {
                    "key": h.key,
                    "name": h.name,
                    "better": h.better,
                    "winner": h.winner,
                    "clear": h.clear,
                    "margin": h.margin or None,
                    "estimates": {
                        k: {"value": e.value, "ci_low": e.low, "ci_high": e.high, "lower_bound": e.at_least}
                        for k, e in h.estimates.items()
                    },
                }
                for h in a.verdict.headlines
            ],
            "verdict": a.verdict.lines,
            "validity_flags": a.verdict.flags,
            "comparisons": [c.to_json() for c in a.comparisons],
        }
    )


def export_metrics(a: Analysis, out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics_document(a), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return out


def export_all(
    run_dirs: list[Path], out_dir: Path, *, labels: list[str] | None = None, analysis: Analysis | None = None
) -> dict[str, Path]:
    """Records (CSV, Parquet) per run, report-metrics.json and summary.md, all under `out_dir`.

    One run: `out_dir/records.*`; several: `out_dir/<run label>/records.*`.
    """
    out_dir = Path(out_dir)
    a = analysis or analyse(run_dirs, labels=labels)
    written: dict[str, Path] = {}
    for run in a.runs:
        target = out_dir if len(a.runs) == 1 else out_dir / run.label
        for key, path in export_records(run.path, target).items():
            written[key if len(a.runs) == 1 else f"{run.label}/{key}"] = path
    written["metrics_json"] = export_metrics(a, out_dir / "report-metrics.json")
    summary = out_dir / "summary.md"
    summary.write_text(markdown_summary(a), encoding="utf-8")
    written["summary_md"] = summary
    return written


__all__ = ["export_all", "export_metrics", "export_records", "metrics_document", "records_table"]
