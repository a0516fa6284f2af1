"""Fidelity, measured without live timing: simulated twins of recorded real runs (tests/fixtures/sim_fidelity).

The recorded runs and the fitted profile are fixed, and a twin's noise is seeded, so what the simulator
reproduces is a deterministic number: these tests pin it (a change to the schedulers or the cost models that
moves it must re-record `expected.json`, saying why) and bound what must always hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.sim.fidelity_tables import Tables, assert_reproduced, twin_errors

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity"
PROFILE = FIXTURE / "profile.json"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())
RUNS = sorted(EXPECTED)


@pytest.fixture(scope="module")
def tables() -> Tables:
    return twin_errors(FIXTURE, RUNS, PROFILE)


def test_the_twins_reproduce_the_recorded_errors(tables: Tables) -> None:
    assert_reproduced(tables, EXPECTED)


def test_throughput_is_within_20_percent_everywhere(tables: dict) -> None:
    # The output rate follows from the mean step time, which the fit gets right; latency percentiles also
    # carry the shared machine's noise (docs/simulator.md: two identical real runs differed by up to 2x).
    errors = {(run, engine): e["output tok/s"] for run, engines in tables.items() for engine, e in engines.items()}
    assert len(errors) == 8
    assert all(abs(err) <= 0.2 for err in errors.values()), errors
    assert sum(abs(err) <= 0.05 for err in errors.values()) >= 6, errors


def test_the_fidelity_command_prints_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    assert main(["sim", "fidelity", str(FIXTURE / "burst"), "--profile", str(PROFILE), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    for metric in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "output tok/s"):
        assert printed.count(metric) == 2  # static and continuous
    table = json.loads(out.read_text())
    assert {t["engine"] for t in table} == {"static", "continuous"}


def test_a_run_without_a_measured_engine_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = tmp_path / "sim-only"
    assert main(["run", "--workload", "chat-small", "--requests", "8", "--engine", "sim", "--out", str(run),
                 "--no-report", "--no-progress"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["sim", "fidelity", str(run), "--profile", str(PROFILE)]) == 2
    assert "no in-process engine" in capsys.readouterr().err
    assert main(["sim", "fit", str(run), "-o", str(tmp_path / "p.json")]) == 2
    assert "simulated: fit on measured steps only" in capsys.readouterr().err
