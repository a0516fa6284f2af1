"""Exports: records as CSV and Parquet, the versioned report-metrics.json, the Markdown summary."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from harness.metrics import load_records
from reports.analysis import analyse
from reports.exports import METRICS_SCHEMA, METRICS_SCHEMA_VERSION, export_all, export_records, metrics_document
from reports.markdown import markdown_summary


@pytest.fixture(scope="module")
def exported(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return export_all([run_dir], tmp_path_factory.mktemp("export"))


def test_parquet_round_trips_the_records(run_dir: Path, exported: dict[str, Path]) -> None:
    table = pq.read_table(exported["records_parquet"])
    records = load_records(run_dir / "records.jsonl")
    assert table.num_rows == len(records)
    assert set(records.columns) <= set(table.column_names)
    frame = table.to_pandas()
    assert frame["request_id"].tolist() == records["request_id"].tolist()
    np.testing.assert_allclose(frame["t_first_token"], records["t_first_token"])
    assert [list(v) for v in frame["token_times"]] == [list(v) for v in records["token_times"]]


def test_csv_holds_every_record_with_lists_as_json(run_dir: Path, exported: dict[str, Path]) -> None:
    records = load_records(run_dir / "records.jsonl")
    with exported["records_csv"].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(records)
    assert rows[0]["request_id"] == records["request_id"].iloc[0]
    assert json.loads(rows[0]["token_times"]) == pytest.approx(records["token_times"].iloc[0])
    failed = [r for r in rows if r["error_type"]]
    assert failed and all(r["t_finish"] == "" for r in failed)  # missing values are empty cells


def test_metrics_json_follows_its_schema(exported: dict[str, Path]) -> None:
    doc = json.loads(exported["metrics_json"].read_text())
    assert doc["schema"] == METRICS_SCHEMA == "batchmark.report-metrics"
    assert doc["schema_version"] == METRICS_SCHEMA_VERSION == 1
    assert set(doc) >= {"generated_by", "runs", "series", "headlines", "verdict", "validity_flags", "comparisons"}
    run = doc["runs"][0]
    assert set(run) >= {"label", "path", "workload", "fingerprint", "manifest", "engine_runs", "repeat", "notes"}
    er = run["engine_runs"][0]
    assert set(er) >= {"label", "engine", "trial", "summary", "summary_source", "stopped_early"}
    assert er["summary"]["schema_version"] == 1
    head = doc["headlines"][0]
    assert set(head) >= {"key", "name", "better", "winner", "clear", "estimates"}
    assert set(next(iter(head["estimates"].values()))) == {"value", "ci_low", "ci_high", "lower_bound"}
    comp = doc["comparisons"][0]
    assert comp["kind"] == "paired" and comp["test"].startswith("Wilcoxon")
    assert set(comp["metrics"][0]) >= {
        "metric",
        "median_a",
        "median_b",
        "delta",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "verdict",
        "test",
    }


def test_metrics_json_is_strict(run_dir: Path) -> None:
    json.dumps(metrics_document(analyse(run_dir)), allow_nan=False)


def test_markdown_summary(run_dir: Path, exported: dict[str, Path]) -> None:
    text = markdown_summary(run_dir)
    assert text == exported["summary_md"].read_text()
    assert text.startswith("## synthetic-chat")
    assert "**continuous wins" in text
    assert "| headline | continuous | static | winner |" in text
    assert "### continuous vs static: Wilcoxon signed-rank (paired)" in text
    assert "failed_requests" in text
    assert "<details><summary>Metric table</summary>" in text
    assert "<script" not in text and len(text) < 20_000
    # Every table row has as many cells as its header.
    for block in text.split("\n\n"):
        rows = [r for r in block.splitlines() if r.startswith("|")]
        if rows:
            assert len({r.count(" | ") for r in rows if not r.startswith("|---")}) == 1, block


def test_several_runs_export_per_label(run_dir: Path, after_dir: Path, tmp_path: Path) -> None:
    written = export_all([run_dir, after_dir], tmp_path, labels=["before", "after"])
    assert (tmp_path / "before" / "records.parquet").exists()
    assert (tmp_path / "after" / "records.csv").exists()
    assert written["metrics_json"] == tmp_path / "report-metrics.json"
    assert "after/continuous vs before/continuous" in (tmp_path / "summary.md").read_text()


def test_export_records_alone(run_dir: Path, tmp_path: Path) -> None:
    paths = export_records(run_dir, tmp_path / "x")
    assert paths["records_parquet"].stat().st_size > 0 and paths["records_csv"].stat().st_size > 0
