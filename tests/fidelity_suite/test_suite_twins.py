"""The pre-registered suite (tests/fixtures/fidelity_suite/suite.toml) reproduced from its committed real runs:
every pair's twins (seeded, so deterministic) against what its three trials measured, the whole table equal to the
one recorded (expected.json, from `batchmark sim fidelity --suite ... --json`) and every pair reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import load_suite
from harness.fidelity_suite.table import format_table, suite_table

pytestmark = pytest.mark.slow  # nine pairs of five twins each: scheduled first (tests/conftest.py)

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite"
SUITE = load_suite(HERE / "suite.toml")


@pytest.fixture(scope="module")
def table() -> dict:
    return suite_table(SUITE, HERE / "runs", simulate_twin)


def test_every_pair_is_measured_and_reported(table: dict) -> None:
    assert [p["pair"] for p in table["pairs"]] == [p.name for p in SUITE.pairs]
    for pair in table["pairs"]:
        assert "missing" not in pair and len(pair["rows"]) == 7, pair["pair"]
        assert all(r["trials"] == SUITE.trials for r in pair["rows"] if r["error"] is not None), pair["pair"]
    text = format_table(table)
    assert all(p.name in text for p in SUITE.pairs)
    assert sum(table["verdicts"].values()) == len(SUITE.pairs)


def test_the_twins_reproduce_the_recorded_table(table: dict) -> None:
    expected = json.loads((HERE / "expected.json").read_text())
    assert table["verdicts"] == expected["verdicts"] and table["target"] == expected["target"]
    for got, want in zip(table["pairs"], expected["pairs"], strict=True):
        assert got["verdict"] == want["verdict"], got["pair"]
        for g, w in zip(got["rows"], want["rows"], strict=True):
            assert (g["metric"], g["verdict"], g["trials_spread"]) == (w["metric"], w["verdict"], w["trials_spread"])
            assert g["error"] == pytest.approx(w["error"], abs=1e-3), (got["pair"], g["metric"])
    for metric, s in expected["summary"].items():
        assert table["summary"][metric]["median_abs_error"] == pytest.approx(s["median_abs_error"], abs=1e-3)
        assert table["summary"][metric]["worst_pair"] == s["worst_pair"]
