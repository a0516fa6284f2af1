"""Fidelity on a quiet machine (tests/fixtures/sim_fidelity/quiet): five real runs recorded back to back at load
average 0.4-1.1, and profiles fitted on three of them; every profile's twins of the runs it was not fitted on.

Twins are seeded, so their errors are deterministic: pinned here, with the bounds
docs/measurements/2026-12-01-sim-fidelity-cpu.md states.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sim.fidelity_tables import Tables, assert_reproduced, twin_errors

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

QUIET = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity" / "quiet"
EXPECTED: dict[str, Tables] = json.loads((QUIET / "expected.json").read_text())
MEDIANS = ("TTFT p50", "TPOT p50", "E2E p50", "output tok/s")


@pytest.fixture(scope="module")
def tables() -> dict[str, Tables]:
    return {fit: twin_errors(QUIET, list(held), QUIET / f"profile-{fit}.json") for fit, held in EXPECTED.items()}


def test_the_twins_reproduce_the_recorded_errors(tables: dict[str, Tables]) -> None:
    for fit, expected in EXPECTED.items():
        assert_reproduced(tables[fit], expected)


def test_continuous_below_saturation_lands_within_10_percent_on_medians_and_throughput(tables) -> None:
    # chat-mix at 2 and 1 req/s, from the profile of the chat-small run (the narrowest fit: batches of <= 8)
    for run in ("chat-mix", "chat-mix-r1"):
        errors = tables["chat-small"][run]["continuous"]
        assert all(abs(errors[m]) <= 0.10 for m in MEDIANS), (run, errors)
    within = [
        (fit, run)
        for fit, t in tables.items()
        for run, e in t.items()
        if all(abs(e["continuous"][m]) <= 0.10 for m in MEDIANS)
    ]
    assert len(within) >= 5, within


def test_throughput_is_within_10_percent_for_every_open_loop_twin(tables) -> None:
    # open loops replay the schedule, so throughput follows it while the engine keeps up; the closed loop's does not
    for fit, t in tables.items():
        for run, engines in t.items():
            if run != "closed":
                assert all(abs(e["output tok/s"]) <= 0.10 for e in engines.values()), (fit, run)
