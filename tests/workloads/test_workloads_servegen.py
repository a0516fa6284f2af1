"""Alibaba ServeGen's client files (workloads/readers/servegen.py), on a tiny client in its format (the data is
not bundled: docs/workloads.md says how to fetch it), and each bad field as one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from workloads import load_workload

TRACE = "0,0.5,1.2,Gamma,0.7,1.4\n10,0,0,,0,0\n20,0.2,3.0,Weibull,0.4,0.5\n"
DATASET = {"0": {"input_tokens": "{100: 0.25, 200: 0.75}", "output_tokens": "{10: 0.5, 30: 0.5}"}}


def _client(tmp_path: Path, trace: str = TRACE, dataset: object = DATASET) -> Path:
    path = tmp_path / "chunk-7-trace.csv"
    path.write_text(trace)
    (tmp_path / "chunk-7-dataset.json").write_text(dataset if isinstance(dataset, str) else json.dumps(dataset))
    return path


def test_a_client_is_drawn_window_by_window(tmp_path: Path) -> None:
    w = load_workload(str(_client(tmp_path)))
    arrivals = [r.arrival_s for r in w.requests]
    assert len(arrivals) == 5 + 2  # ceil(0.5 * 10), none in the empty window, ceil(0.2 * 10)
    assert sum(a < 10 for a in arrivals) == 5 and sum(a >= 20 for a in arrivals) == 2
    assert {r.input_tokens for r in w.requests} <= {100, 200} and {r.output_tokens for r in w.requests} <= {10, 30}
    again = load_workload(str(_client(tmp_path)))
    assert [(r.arrival_s, r.input_tokens) for r in again.requests] == [
        (r.arrival_s, r.input_tokens) for r in w.requests
    ]


BAD = {
    "wrong field count": (
        TRACE.replace("0,0.5,1.2,Gamma,0.7,1.4", "0,0.5,1.2,Gamma"),
        DATASET,
        "chunk-7-trace.csv:1: line: expected 6 fields",
    ),
    "NaN rate": (TRACE.replace("0.5,1.2", "nan,1.2"), DATASET, "chunk-7-trace.csv:1: rate: expected a finite"),
    "negative rate": (TRACE.replace("0.5,1.2", "-1,1.2"), DATASET, "chunk-7-trace.csv:1: rate: expected a finite"),
    "unknown pattern": (TRACE.replace("Weibull", "Pareto"), DATASET, "chunk-7-trace.csv:3: pattern: unknown"),
    "zero shape": (TRACE.replace("Gamma,0.7", "Gamma,0"), DATASET, "chunk-7-trace.csv:1: shape: expected a finite"),
    "timestamps out of order": (TRACE.replace("20,0.2", "5,0.2"), DATASET, "chunk-7-trace.csv:3: timestamp: "),
    "binary trace": ("\x00\x01\x02", DATASET, "chunk-7-trace.csv"),
    "empty trace": ("", DATASET, "chunk-7-trace.csv:1: file: empty file"),
    "every window idle": ("0,0,0,,0,0\n600,0,0,,0,0\n", DATASET, "chunk-7-trace.csv:1: rate: no requests"),
    "dataset not JSON": (TRACE, "{", "chunk-7-dataset.json:1: json: not valid JSON"),
    "histogram is code": (
        TRACE,
        {"0": {**DATASET["0"], "input_tokens": "__import__('os').getcwd()"}},
        "chunk-7-dataset.json: 0.input_tokens: expected a non-empty dict literal",
    ),
    "probabilities off": (
        TRACE,
        {"0": {**DATASET["0"], "output_tokens": "{10: 0.5}"}},
        "chunk-7-dataset.json: 0.output_tokens: probabilities sum to 0.5",
    ),
    "NaN probability": (
        TRACE,
        {"0": {**DATASET["0"], "output_tokens": "{10: float('nan')}"}},
        "chunk-7-dataset.json: 0.output_tokens: expected a non-empty dict literal",
    ),
    "reasoning data": (
        TRACE,
        {"0": {**DATASET["0"], "reason_ratio": "{0: 1.0}"}},
        "chunk-7-dataset.json: 0.reason_ratio: not language data",
    ),
    "no dataset window": (TRACE, {"5": DATASET["0"]}, "chunk-7-trace.csv:1: timestamp: no dataset window"),
}


def test_a_trace_without_its_dataset_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _client(tmp_path)
    (tmp_path / "chunk-7-dataset.json").unlink()
    assert main(["workload", "describe", str(path), "--format", "servegen"]) == 2
    assert "chunk-7-trace.csv:1: file: a ServeGen client is" in capsys.readouterr().err


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_servegen_field_is_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, dataset, expected = BAD[case]
    path = _client(tmp_path, trace, dataset)
    assert main(["workload", "describe", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert expected in err, err
