"""A real (tiny) `batchmark run` of both engines, then `batchmark report` on its run directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from reports.analysis import analyse
from reports.report import build_report

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("real") / "run"
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "6",
        "--rate",
        "20",
        "--max-context",
        "64",
        "--engine",
        "static",
        "--engine",
        "continuous",
        "--threads",
        "1",
        "--no-report",
        "--out",
        str(out),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_report_of_a_real_run(real_run: Path, tmp_path: Path) -> None:
    # in process: the run above crossed the process boundary; the report need not pay a second interpreter
    assert main(["report", str(real_run), "-o", str(tmp_path / "r.html"), "--export", str(tmp_path / "exp")]) == 0
    text = (tmp_path / "r.html").read_text()
    assert text.count("Plotly.newPlot") >= 10
    assert "static" in text and "continuous" in text
    doc = json.loads((tmp_path / "exp" / "report-metrics.json").read_text())
    assert {er["engine"] for er in doc["runs"][0]["engine_runs"]} == {"static", "continuous"}
    assert all(er["summary_source"] == "metrics.json" for er in doc["runs"][0]["engine_runs"])


def test_real_trace_and_manifest_are_understood(real_run: Path) -> None:
    a = analyse(real_run)
    assert {er.engine for er in a.series} == {"static", "continuous"}
    for er in a.series:
        assert er.trace is not None and not er.trace.empty
        assert er.trace.frame["max_slots"].max() > 0
    static = next(er for er in a.series if er.engine == "static")
    assert (static.trace.frame["scheduler"] == "static").all()
    assert a.comparisons and a.comparisons[0].kind == "paired"
    assert a.runs[0].fingerprint and a.runs[0].workload_name == "chat-small"
    text = build_report(a)
    assert "git" in text and "fingerprint" in text  # lineage from the real manifest
