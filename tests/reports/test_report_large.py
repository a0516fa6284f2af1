"""A 100,000-request run: the report stays under 15 MB and bounded, and its numbers are the run's.

(The <= 10 s build-time target is a benchmark: tests/benchmarks/test_report_speed.py, `make bench`.)
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from reports import write_report
from reports.downsample import CDF_POINTS, DETAIL_STEPS, GANTT_REQUESTS, TIME_BINS
from tests.fixtures.run_dirs import capacity_rps, write_synthetic_run

pytestmark = pytest.mark.slow
MAX_BYTES = 15 * 1024 * 1024


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100k requests, short outputs, offered at 70% of continuous capacity (static batching overloaded)."""
    return write_synthetic_run(
        tmp_path_factory.mktemp("big") / "run",
        requests=100_000,
        slots=32,
        mean_output=8,
        rate=0.7 * capacity_rps(32, 8),
        n_boot=200,
    )


@pytest.fixture(scope="module")
def big_report(big_run: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = write_report([big_run], tmp_path_factory.mktemp("big-html") / "report.html")
    assert out.stat().st_size <= MAX_BYTES
    return out.read_text(encoding="utf-8")


def test_report_of_100k_requests_stays_under_15_mb(big_report: str) -> None:
    assert len(big_report.encode()) <= MAX_BYTES


def test_figures_are_downsampled(big_report: str) -> None:
    calls = re.findall(r'Plotly\.newPlot\(\s*"([^"]+)",\s*(\[.*?\]),\s*\{', big_report, flags=re.S)
    assert len(calls) >= 10
    bound = max(CDF_POINTS + 10, TIME_BINS + 1, DETAIL_STEPS + 1, GANTT_REQUESTS, 202)
    for fig_id, data in calls:
        for trace in json.loads(data):
            for axis in ("x", "y"):
                values = trace.get(axis)
                if isinstance(values, dict):  # a typed array: {"dtype": "f8", "bdata": base64}
                    n = len(base64.b64decode(values["bdata"])) // int(values["dtype"][1:])
                else:
                    n = len(values or [])
                assert n <= bound, (fig_id, trace.get("name"), axis, n)
    assert "Long traces" not in big_report or "sampled" in big_report  # the report says when it sampled


def test_numbers_are_the_runs(big_run: Path, big_report: str) -> None:
    metrics = json.loads((big_run / "metrics.json").read_text())
    requests = {r["engine"]: r["summary"]["requests"]["total"] for r in metrics["runs"]}
    assert requests == {"static": 100_000, "continuous": 100_000}
    assert "200,000 requests shown" in big_report
    assert re.search(r'<p class="lead">continuous wins', big_report)
    assert "same schedule: 100,000 requests paired" in big_report
