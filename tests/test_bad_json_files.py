"""Whole-file JSON and TOML readers handed a bad file (#32): one error line naming the file, never a traceback.

A case per reader and kind of bad file that was broken before (a traceback or a silent wrong result), plus
one per reader that was already fine; the JSON-lines readers have their own (tests/reports, tests/workloads).
Where batchmark itself writes the file and reads it again (a speed cache, a shipped validation table), a bad
one falls back to what a missing one gives.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import harness.estimate as estimate
import harness.gpu_truth.band as band
from engines.sim.files import read_json_object
from engines.sim.spec_decode import load_histogram
from harness.cli import main
from harness.errors import user_errors
from harness.fidelity_suite.spec import load_suite
from harness.gate.config import load_rules_file
from harness.gate.inputs import load_run
from harness.serving_path import load_serving
from harness.simulation import run_engines
from harness.study.plan import load_plan
from reports.load import read_json
from reports.study import build_study_report
from tests.fixtures.gate_runs import synthetic_run

DEEP = 100_000  # past the json module's and tomllib's recursion limits
FILES: dict[str, bytes | None] = {
    "not JSON": b"hello, not json\n",
    "binary": b"\x89PNG\r\n\x1a\n\x00\xff\xfe",
    "empty": b"",
    "a list": b"[1, 2, 3]\n",
    "not a list": json.dumps({"architectures": 5}).encode(),  # a number where a list of names belongs
    "deep JSON": b"[" * DEEP + b"]" * DEEP,
    "deep TOML": b"x = " + b"[" * DEEP + b"]" * DEEP + b"\n",
    "missing": None,
}


def _write(directory: Path, name: str, kind: str) -> Path:
    path = directory / name
    if FILES[kind] is not None:
        path.write_bytes(FILES[kind])
    return path


def _run_dir(tmp_path: Path, kind: str) -> Path:
    """A run directory whose records are whole and whose manifest.json is the bad file."""
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in synthetic_run(0, n=3)))
    _write(tmp_path, "manifest.json", kind)
    return tmp_path


def _model_dir(tmp_path: Path, kind: str) -> None:
    from engines.model.loader import load_model

    _write(tmp_path, "config.json", kind)
    load_model(str(tmp_path))


# reader -> (how a bad file reaches it, given the directory and the kind), file name its error must name
READERS: dict[str, tuple[Callable[[Path, str], object], str]] = {
    "sim JSON object": (lambda d, k: read_json_object(_write(d, "cfg.json", k), "model config"), "cfg.json"),
    "serving-path file": (lambda d, k: load_serving(_write(d, "path.json", k)), "path.json"),
    "acceptance histogram": (lambda d, k: load_histogram(_write(d, "hist.json", k)), "hist.json"),
    "report's run files": (lambda d, k: read_json(_write(d, "metrics.json", k)), "metrics.json"),
    "study report": (lambda d, k: build_study_report(_write(d, "study.json", k).parent), "study.json"),
    "gate run manifest": (lambda d, k: load_run(_run_dir(d, k)), "manifest.json"),
    "sim fit manifest": (lambda d, k: run_engines(_run_dir(d, k)), "manifest.json"),
    "model config.json": (_model_dir, "config.json"),
    "gate rules": (lambda d, k: load_rules_file(_write(d, "gate.toml", k)), "gate.toml"),
    "study plan": (lambda d, k: load_plan(_write(d, "plan.toml", k)), "plan.toml"),
    "fidelity suite": (lambda d, k: load_suite(_write(d, "suite.toml", k)), "suite.toml"),
}

ERRORS = [
    # already one line before #32
    ("sim JSON object", "deep JSON"),
    ("serving-path file", "deep JSON"),
    ("acceptance histogram", "deep JSON"),
    ("report's run files", "not JSON"),
    ("gate run manifest", "not JSON"),
    ("sim fit manifest", "deep JSON"),
    ("model config.json", "not JSON"),
    ("gate rules", "binary"),
    ("study plan", "binary"),
    ("fidelity suite", "missing"),
    # RecursionError tracebacks
    ("report's run files", "deep JSON"),
    ("study report", "deep JSON"),
    ("gate run manifest", "deep JSON"),
    ("model config.json", "deep JSON"),
    ("gate rules", "deep TOML"),
    ("study plan", "deep TOML"),
    ("fidelity suite", "deep TOML"),
    # other tracebacks: JSONDecodeError, UnicodeDecodeError, FileNotFoundError, TypeError, AttributeError
    ("study report", "not JSON"),
    ("study report", "binary"),
    ("study report", "empty"),
    ("study report", "a list"),
    ("study report", "missing"),
    ("gate run manifest", "binary"),
    ("sim fit manifest", "a list"),
    ("model config.json", "a list"),
    ("model config.json", "not a list"),
    ("fidelity suite", "binary"),
    # silently read as no manifest
    ("gate run manifest", "a list"),
]


@pytest.mark.parametrize(("reader", "kind"), ERRORS, ids=[f"{r}-{k}" for r, k in ERRORS])
def test_a_bad_file_is_one_error_naming_it(tmp_path: Path, reader: str, kind: str) -> None:
    call, name = READERS[reader]
    with pytest.raises(user_errors()) as err:
        call(tmp_path, kind)
    message = str(err.value)
    assert name in message and "\n" not in message


def test_a_deep_workload_spec_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command line: `batchmark workload describe SPEC.toml` (was a RecursionError traceback)."""
    spec = _write(tmp_path, "spec.toml", "deep TOML")
    assert main(["workload", "describe", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("batchmark: error:") and f"{spec}:1: toml: nested too deeply" in err
    assert "\n" not in err


@pytest.mark.parametrize("kind", ["not JSON", "deep JSON"])
def test_a_bad_speed_cache_falls_back_to_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """`batchmark run`'s estimate: a cache nested too deeply was a RecursionError; an invalid one was skipped."""
    monkeypatch.setattr(estimate, "speed_cache", lambda model, dtype: _write(tmp_path, "speed.json", kind))
    speed = estimate.load_speed(None, "float32")
    assert speed is not None and speed.prefill_tok_s == estimate.DEFAULT_PREFILL_TOK_S


@pytest.mark.parametrize("kind", ["not JSON", "deep JSON"])
def test_a_bad_validation_table_reads_as_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The simulation summary's TRUST line: a table nested too deeply was a RecursionError."""
    monkeypatch.setattr(band, "VALIDATION_DIR", tmp_path)
    monkeypatch.setattr(band, "validation_name", lambda engine: band.ROOFLINE)
    _write(tmp_path, f"{band.ROOFLINE}.json", kind)
    text = band.trust_text({"cost_model": {"kind": "roofline"}})
    assert text is not None and text.startswith(f"no validation table {band.ROOFLINE}.json")
