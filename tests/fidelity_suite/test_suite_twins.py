"""Each pre-registered suite (tests/fixtures/fidelity_suite*/suite.toml) reproduced from its committed real runs:
every pair's twins (seeded, so deterministic) against what its three trials measured, the whole table equal to the
one recorded (expected.json, from `batchmark sim fidelity --suite ... --json`) and every pair reported. What each
later suite was registered to be is checked beside it (test_suite_v2_twins.py .. test_suite_v13_twins.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import Suite, load_suite
from harness.fidelity_suite.table import format_table, suite_table

pytestmark = pytest.mark.slow  # nine pairs of five twins each, per suite: scheduled first (tests/conftest.py)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Where a suite's registered tipping rule (`[judge] tipping_elasticity`) acted on its runs: (pair, latency, why),
# the same in both verdicts; none in a suite without the rule
TIPPED = {
    "fidelity_suite_v11": [("noisy-neighbour-fair", "TTFT p99", "on a tipping point: elasticity 57.3")],
    "fidelity_suite_v12": [
        ("noisy-neighbour-fair", "TTFT p99", "on a tipping point: elasticity 24.8"),
        ("hol-blocking-sjf", "TTFT p99", "on a tipping point: elasticity 3.4"),
    ],
    "fidelity_suite_v13": [("hol-blocking-static", "E2E p50", "on a tipping point: elasticity 4.9")],
}
SUITES = (
    "fidelity_suite",
    "fidelity_suite_v2",
    "fidelity_suite_v3",
    "fidelity_suite_v4",
    "fidelity_suite_v5",
    "fidelity_suite_v6",
    "fidelity_suite_v7",
    "fidelity_suite_v8",
    "fidelity_suite_v9",
    "fidelity_suite_v10",
    "fidelity_suite_v11",
    "fidelity_suite_v12",
    "fidelity_suite_v13",
)


@pytest.fixture(scope="module", params=SUITES)
def suite_and_table(request: pytest.FixtureRequest) -> tuple[Path, Suite, dict]:
    here = FIXTURES / request.param
    suite = load_suite(here / "suite.toml")
    return here, suite, suite_table(suite, here / "runs", simulate_twin)


def test_every_pair_is_measured_and_reported(suite_and_table: tuple[Path, Suite, dict]) -> None:
    _, suite, table = suite_and_table
    assert [p["pair"] for p in table["pairs"]] == [p.name for p in suite.pairs]
    for pair in table["pairs"]:
        assert "missing" not in pair and len(pair["rows"]) == 7, pair["pair"]
        assert all(r["trials"] == suite.trials for r in pair["rows"] if r["error"] is not None), pair["pair"]
    text = format_table(table)
    assert all(p.name in text for p in suite.pairs)
    assert sum(table["verdicts"].values()) == len(suite.pairs)


def test_the_twins_reproduce_the_recorded_table(suite_and_table: tuple[Path, Suite, dict]) -> None:
    here, _, table = suite_and_table
    expected = json.loads((here / "expected.json").read_text())
    assert table["verdicts"] == expected["verdicts"] and table["target"] == expected["target"]
    for got, want in zip(table["pairs"], expected["pairs"], strict=True):
        assert got["verdict"] == want["verdict"], got["pair"]
        for g, w in zip(got["rows"], want["rows"], strict=True):
            assert (g["metric"], g["verdict"], g["trials_spread"]) == (w["metric"], w["verdict"], w["trials_spread"])
            assert g["error"] == pytest.approx(w["error"], abs=1e-3), (got["pair"], g["metric"])
    for metric, s in expected["summary"].items():
        assert table["summary"][metric]["median_abs_error"] == pytest.approx(s["median_abs_error"], abs=1e-3)
        assert table["summary"][metric]["worst_pair"] == s["worst_pair"]


def test_the_at_speed_verdict_reproduces_where_registered(suite_and_table: tuple[Path, Suite, dict]) -> None:
    """A suite with `[judge] at_trial_speed`: each pair's second verdict, from its trials' recorded speeds."""
    here, suite, table = suite_and_table
    expected = json.loads((here / "expected.json").read_text())
    assert ("at_trial_speed_verdicts" in table) == suite.at_trial_speed == ("at_trial_speed_verdicts" in expected)
    if not suite.at_trial_speed:
        return
    assert table["at_trial_speed_verdicts"] == expected["at_trial_speed_verdicts"]
    assert table["at_trial_speed_target"] == expected["at_trial_speed_target"]
    assert table.get("at_trial_speed_shapes") == expected.get("at_trial_speed_shapes")
    assert table.get("at_trial_speed_shapes", "all") == suite.at_trial_speed_shapes
    for got, want in zip(table["pairs"], expected["pairs"], strict=True):
        g, w = got["at_trial_speed"], want["at_trial_speed"]
        assert (g["verdict"], g["speeds"]) == (w["verdict"], w["speeds"]), got["pair"]
        for gr, wr in zip(g["rows"], w["rows"], strict=True):
            assert (gr["metric"], gr["verdict"]) == (wr["metric"], wr["verdict"]), got["pair"]
            assert gr["trial_errors"] == pytest.approx(wr["trial_errors"], abs=1e-3), (got["pair"], gr["metric"])


def test_the_tipping_rule_acts_where_recorded(suite_and_table: tuple[Path, Suite, dict]) -> None:
    """A suite with `[judge] tipping_elasticity`: the latencies it makes cannot tell, with their reason, in both
    verdicts, and each pair's elasticities as recorded; a suite without it names no reason."""
    here, suite, table = suite_and_table
    expected = json.loads((here / "expected.json").read_text())
    assert table.get("tipping_rule") == expected.get("tipping_rule")
    assert (suite.tipping is None) == ("tipping_rule" not in table)
    tipped = TIPPED.get(here.name, [])
    for verdict in ("plain", "at_trial_speed"):
        rows = [
            (p["pair"], r)
            for p in table["pairs"]
            for r in (p["rows"] if verdict == "plain" else p.get("at_trial_speed", {}).get("rows", []))
        ]
        assert [(pair, r["metric"], r["why"]) for pair, r in rows if "why" in r] == tipped, verdict
        assert all(r["verdict"] == "cannot_tell" for _, r in rows if "why" in r), verdict
    for got, want in zip(table["pairs"], expected["pairs"], strict=True):
        assert ("sensitivity" in got) == ("sensitivity" in want) == (suite.tipping is not None), got["pair"]
        if suite.tipping is None:
            continue
        g, w = got["sensitivity"]["metrics"], want["sensitivity"]["metrics"]
        assert [(m["metric"], m["tipping"]) for m in g] == [(m["metric"], m["tipping"]) for m in w], got["pair"]
        assert [m["elasticity"] for m in g] == pytest.approx([m["elasticity"] for m in w], abs=1e-3), got["pair"]
