"""From the step trace alone a reader can tell static from continuous batching."""

from __future__ import annotations

import itertools

import pytest

from engines.inprocess import EngineOptions
from engines.scheduler import ContinuousConfig
from engines.stages import Stage
from engines.static_scheduler import StaticConfig
from engines.step_record import STEP_FIELDS
from tests.engines.helpers import mixed_requests, run_engine


@pytest.fixture(scope="module")
def traces(embedded):
    requests = mixed_requests(24, seed=3, vocab=embedded.model.config.vocab_size, prompt=(8, 24), output=(2, 40))
    static = run_engine(embedded, EngineOptions(kind="static", static=StaticConfig(max_batch=6)), requests)
    continuous = run_engine(
        embedded, EngineOptions(kind="continuous", continuous=ContinuousConfig(max_running=6)), requests
    )
    return static.steps, continuous.steps


def admits_while_running(steps) -> int:
    """Steps where a request was admitted beside sequences that were already running."""
    return sum(1 for s in steps if s["admitted"] and s["num_running"] > len(s["admitted"]))


def test_every_record_has_the_fields(traces):
    for steps in traces:
        assert steps and all(tuple(s) == STEP_FIELDS for s in steps)
        assert all(s["t_end"] >= s["t_start"] for s in steps)
        assert [s["step"] for s in steps] == list(range(len(steps)))


def test_static_admits_only_between_batches_and_holds_idle_slots(traces):
    static, _ = traces
    assert admits_while_running(static) == 0
    assert sum(s["idle_slots"] for s in static) > 0  # finished members kept their slots
    assert any(s["blocked_reason"] == "batch_running" for s in static)
    finishes = [decision for s in static for decision in s["decisions"] if decision["action"] == "finish"]
    assert finishes and all(d["slot_held_until_batch_ends"] for d in finishes)


def test_continuous_refills_freed_slots_at_once(traces):
    _, continuous = traces
    assert admits_while_running(continuous) > 0
    assert sum(s["idle_slots"] for s in continuous) == 0
    # a slot freed by a finish at step k is refilled at step k+1 while work waits
    refills = [b for a, b in itertools.pairwise(continuous) if a["finished"] and a["waiting"]]
    assert refills and all(b["admitted"] for b in refills)
    stages = {d["stage"] for s in continuous for d in s["decisions"]}
    assert {Stage.FORM, Stage.REMOVE, Stage.FILL} <= stages


def test_continuous_keeps_slots_fuller(traces):
    static, continuous = traces

    def occupancy(steps):
        return sum(s["num_running"] for s in steps) / sum(s["max_slots"] for s in steps)

    assert occupancy(continuous) > occupancy(static)
    assert len(continuous) < len(static)
