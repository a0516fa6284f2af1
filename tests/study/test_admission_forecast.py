"""SLO-aware admission on the simulator predicts on the engine's own cost model: a request's predicted TTFT is
what the same engine then takes, on the plain roofline and on the calibrated default alike."""

from __future__ import annotations

import pytest

from engines.api import Request
from engines.sim.build import build_sim_engine
from engines.ttft_forecast import slot_step
from harness.loadgen.scenarios import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop


def test_a_slot_frees_when_the_earliest_holder_ends() -> None:
    assert slot_step([5, 3, 9], [], free=0) == 3
    assert slot_step([5, 3, 9], [10], free=0) == 5  # the one served first took the slot freed at 3
    assert slot_step([5, 3, 9], [1, 1], free=0) == 5  # the first held the slot freed at 3 until 4, the next until 5
    assert slot_step([5], [7], free=1) == 5  # a free slot at once, then the running one's
    assert slot_step([], [], free=2) == 0


def _run(options: dict, label: str) -> tuple[dict, list]:
    """One long request on the only slot, then a short one behind it half a second later."""
    engine = build_sim_engine({"max_running": 1, **options}, label)
    steps: list = []
    engine.set_step_sink(steps.append)
    items = [
        Scheduled(Request("long", range(200), 300, ignore_eos=True), 0.0),
        Scheduled(Request("probe", range(300), 8, ignore_eos=True), 0.5),
    ]
    records: dict = {}
    run_virtual_open_loop(engine, items, lambda r: records.__setitem__(r.request_id, r), label=label)
    return records, steps


@pytest.mark.parametrize("base", [{"calibration": "none"}, {}], ids=["plain-roofline", "calibrated-default"])
def test_the_prediction_is_what_the_engine_then_takes(base: dict) -> None:
    served, _ = _run(base, "served")
    probe = served["probe"]
    taken = probe.t_first_token - probe.t_scheduled
    guarded, steps = _run({**base, "admission": "shed", "admission_slo_ms": 100}, "shed")
    assert guarded["long"].error_type is None and guarded["probe"].error_type == "slo_shed"
    (shed,) = [d for s in steps for d in s.decisions if d["action"] == "shed"]
    assert taken > 1.0  # it waits for the long request's ~290 remaining decode steps
    assert shed["predicted_ttft_s"] == pytest.approx(taken, rel=0.05)
