"""Dispatch latency: measured from a run (idle arrivals only), stored in the profile, added by the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.api import Request
from engines.errors import EngineInputError
from engines.sim.fitted import load_profile
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop
from harness.simulation import idle_arrival_waits
from tests.sim.test_fitted import fit_steps, synthetic_steps


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_only_arrivals_at_an_idle_engine_measure_its_dispatch(tmp_path: Path) -> None:
    spans = [(1.0, 1.01), (1.0101, 1.02), (2.0, 2.01)]
    write_jsonl(tmp_path / "steps" / "continuous-t0.jsonl", [{"t_start": a, "t_end": b} for a, b in spans])
    record = {"engine": "continuous", "trial": 0}
    write_jsonl(
        tmp_path / "records.jsonl",
        [
            {**record, "request_id": "idle", "t_scheduled": 0.9993, "t_admitted": 1.0},  # 0.7 ms to its step
            {**record, "request_id": "busy", "t_scheduled": 1.005, "t_admitted": 1.0101},  # waited for a step
            {**record, "request_id": "idle-2", "t_scheduled": 1.9995, "t_admitted": 2.0},
            {**record, "request_id": "shed", "t_scheduled": 1.5, "t_admitted": None},  # never admitted
            {"engine": "static", "trial": 0, "request_id": "other", "t_scheduled": 0.5, "t_admitted": 1.0},
        ],
    )
    assert idle_arrival_waits(tmp_path, "continuous") == pytest.approx([0.0007, 0.0005])
    (tmp_path / "records.jsonl").unlink()  # a step trace alone: nothing to measure the dispatch on
    assert idle_arrival_waits(tmp_path, "continuous") == []


def test_a_burst_s_later_arrivals_queue_and_measure_no_dispatch(tmp_path: Path) -> None:
    """Three requests at one instant to an idle engine (v13's fit runs: docs/measurements/2026-12-08-fidelity-suite-
    v13.md): the first is admitted at once; the others wait for its prefill, which is queueing, not dispatch."""
    spans = [(1.0, 1.05), (1.051, 1.1), (1.101, 1.15), (3.0, 3.01)]
    write_jsonl(tmp_path / "steps" / "continuous-t0.jsonl", [{"t_start": a, "t_end": b} for a, b in spans])
    record = {"engine": "continuous", "trial": 0}
    write_jsonl(
        tmp_path / "records.jsonl",
        [
            {**record, "request_id": "second", "t_scheduled": 0.999, "t_admitted": 1.051},  # same instant, queued
            {**record, "request_id": "first", "t_scheduled": 0.999, "t_admitted": 1.0},
            {**record, "request_id": "third", "t_scheduled": 0.999, "t_admitted": 1.101},
            {**record, "request_id": "later", "t_scheduled": 2.9996, "t_admitted": 3.0},  # the queue empty again
        ],
    )
    # of the three, only the one admitted first found nothing waiting (whatever the records' order)
    assert idle_arrival_waits(tmp_path, "continuous") == pytest.approx([0.001, 0.0004])


def profile_with_dispatch(tmp_path: Path, dispatch_s: float) -> Path:
    profile = fit_steps(synthetic_steps())
    profile.engine = {"kv_bytes_per_token": 8192, "kv_blocks": 1000, "block_size": 16, "max_context": 4096}
    profile.dispatch_s = dispatch_s
    path = tmp_path / f"p-{dispatch_s}.json"
    profile.save(path)
    return path


def admitting_steps(profile: Path) -> tuple[list[float], list[float]]:
    """When the steps that admitted "a" (arriving at 1.0) and "b" (at 1.004) started, and every step's start."""
    spec = parse_engine_specs([f"sim:profile={profile},noise=false"], {})[0]
    sim = build_engine(spec, None)
    steps: list = []
    sim.set_step_sink(steps.append)
    schedule = [
        Scheduled(Request("a", [5] * 32, 8, ignore_eos=True), 1.0),
        Scheduled(Request("b", [6] * 32, 8, ignore_eos=True), 1.004),
    ]
    run_virtual_open_loop(sim, schedule, lambda record: None, label="sim")  # type: ignore[arg-type]
    return [s.t_start for s in steps if s.admitted], [s.t_start for s in steps]


def test_the_simulator_delays_an_idle_arrival_by_the_measured_dispatch(tmp_path: Path) -> None:
    (a0, _), _ = admitting_steps(profile_with_dispatch(tmp_path, 0.0))
    (a, b), starts = admitting_steps(profile_with_dispatch(tmp_path, 0.002))
    assert a0 == pytest.approx(1.0)
    assert a == pytest.approx(1.002)  # "a" found the engine idle
    # "b" arrived while a's steps ran: it joins at the first step boundary after it, with no dispatch of its own
    assert b == min(t for t in starts if t >= 1.004)


def test_a_profile_without_dispatch_loads_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    path = profile_with_dispatch(tmp_path, 0.001)
    data = json.loads(path.read_text())
    assert load_profile(path).dispatch_s == 0.001
    del data["dispatch_s"]  # written before it was measured
    path.write_text(json.dumps(data))
    assert load_profile(path).dispatch_s == 0.0
    data["dispatch_s"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(EngineInputError, match="dispatch_s"):
        load_profile(path)
