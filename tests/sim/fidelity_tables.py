"""The fidelity fixtures' shared reading: each recorded run's twins against what the run measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.metrics.simulation import fidelity_rows
from harness.simulation import run_engines

Tables = dict[str, dict[str, dict[str, float]]]  # run -> engine -> metric -> relative error


def twin_errors(root: Path, runs: list[str], profile: Path) -> Tables:
    out: Tables = {}
    for run in runs:
        measured = json.loads((root / run / "metrics.json").read_text())["engines"]
        for engine in run_engines(root / run):
            # headline: the numbers fidelity reads, equal to a full summary's (test_fidelity.py checks)
            twin = simulate_twin(root / run, engine, profile, headline=True)
            rows = fidelity_rows(measured[engine["name"]], twin)
            out.setdefault(run, {})[engine["name"]] = {r["metric"]: r["error"] for r in rows}
    return out


def assert_reproduced(tables: Tables, expected: Tables) -> None:
    for run, engines in expected.items():
        for engine, errors in engines.items():
            for metric, error in errors.items():
                assert tables[run][engine][metric] == pytest.approx(error, abs=1e-3), (run, engine, metric)
