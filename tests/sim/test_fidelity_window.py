"""Fidelity re-measured in one window (tests/fixtures/sim_fidelity/window): a profile fitted on chat-small and
four held-out runs recorded back to back with it; docs/measurements/2026-12-01-sim-fidelity-cpu.md gives the
table and what it shows.

As in test_fidelity.py, twins are seeded, so their errors are deterministic numbers: pinned here, with the
bounds the docs state (continuous batching well under saturation is where the simulator is trusted).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sim.fidelity_tables import Tables, assert_reproduced, twin_errors

WINDOW = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity" / "window"
EXPECTED = json.loads((WINDOW / "expected.json").read_text())


@pytest.fixture(scope="module")
def tables() -> Tables:
    return twin_errors(WINDOW, list(EXPECTED), WINDOW / "profile.json")


def test_the_twins_reproduce_the_recorded_errors(tables: Tables) -> None:
    assert_reproduced(tables, EXPECTED)


def test_continuous_below_saturation_lands_within_10_percent_on_medians_and_throughput(tables: Tables) -> None:
    chat_mix = tables["chat-mix"]["continuous"]  # 2 req/s, recorded minutes after the fit run
    for metric in ("TTFT p50", "TPOT p50", "E2E p50", "output tok/s"):
        assert abs(chat_mix[metric]) <= 0.10, (metric, chat_mix[metric])
    throughput = {(run, e): errs["output tok/s"] for run, engines in tables.items() for e, errs in engines.items()}
    assert sum(abs(err) <= 0.10 for err in throughput.values()) >= 4, throughput
