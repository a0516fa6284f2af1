"""The second pre-registered suite (tests/fixtures/fidelity_suite_v2/suite.toml) reproduced from its committed real
runs, as test_suite_twins.py does the first: every pair's twins (seeded, so deterministic) against what its three
trials measured, the whole table equal to the one recorded (expected.json) and every pair reported. Also what the
second suite was registered to be: the first suite's kinds of case on data the first never ran, its profiles
fitted on a workload none of its pairs runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import load_suite
from harness.fidelity_suite.table import format_table, suite_table

pytestmark = pytest.mark.slow  # nine pairs of five twins each: scheduled first (tests/conftest.py)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v2"
SUITE = load_suite(HERE / "suite.toml")
FIRST = load_suite(FIXTURES / "fidelity_suite" / "suite.toml")


def test_the_second_suite_is_the_first_s_cases_on_other_data() -> None:
    assert [p.covers.split(" (")[0] for p in SUITE.pairs] == [p.covers.split(" (")[0] for p in FIRST.pairs]
    assert [(p.name, p.engine, p.profile) for p in SUITE.pairs] == [(p.name, p.engine, p.profile) for p in FIRST.pairs]
    assert (SUITE.trials, SUITE.run_args, SUITE.targets) == (FIRST.trials, FIRST.run_args, FIRST.targets)
    for new, old in zip(SUITE.pairs, FIRST.pairs, strict=True):
        assert new.args != old.args, new.name  # another slice or another seed: nothing the first suite measured
    assert SUITE.fit_args == ("--workload", "step-profile-wide")  # a workload outside the suite's pairs
    assert not any(a.startswith("step-profile") for p in SUITE.pairs for a in p.args)


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
