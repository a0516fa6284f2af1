"""Decode runs (engines/sim/decode_run.py) change how fast the simulator runs, never what it writes: the same
request records and step trace, byte for byte, as the step-by-step loop; through preemptions, prefix-cache hits
and evictions, and behind a cluster's router."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import engines.sim.decode_run
from engines.api import Request
from engines.sim.engine import SimEngine
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop


def schedule() -> list[Scheduled]:
    """Prompts that share a 64-token system prefix (prefix hits), of mixed lengths, arriving in bursts."""
    items = []
    for i in range(48):
        prompt = list(range(64)) + [1000 + i] * (16 + 37 * (i % 7))
        items.append(Scheduled(Request(f"r{i}", prompt, 20 + 23 * (i % 5), ignore_eos=True), 0.02 * (i // 6)))
    return items


def simulate(spec: str, decode_runs: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes, int]:
    """(records, step trace, decode runs taken) of one run of `schedule()` on `spec`."""
    monkeypatch.setattr(SimEngine, "decode_runs", decode_runs)
    runs = []
    real = engines.sim.decode_run.run_decode
    monkeypatch.setattr("engines.sim.engine.run_decode", lambda *a: runs.append(1) or real(*a))
    (parsed,) = parse_engine_specs([spec], {})
    engine = build_engine(parsed, None)
    steps: list[bytes] = []
    if isinstance(engine, SimEngine):
        engine.set_step_sink(lambda record: steps.append(orjson.dumps(record)))
    records: list[bytes] = []
    run_virtual_open_loop(engine, schedule(), lambda r: records.append(orjson.dumps(r.to_json())), label="e")
    return b"\n".join(records), b"\n".join(steps), len(runs)


@pytest.mark.parametrize(
    "spec",
    [
        "sim:model=llama-3.1-8b,hardware=h100,kv_blocks=60",  # a pool so small that sequences are preempted
        "sim:model=llama-3.1-8b,hardware=h100,kv_blocks=200,max_running=8",  # prefix hits, evictions, a queue
        "cluster:replicas=3,router=cache_aware,replica=sim:model=llama-3.1-8b,hardware=h100,kv_blocks=200",
        # a fitted profile with its measured noise: the clock of a decode run drawn step by step
        f"sim:profile={Path(__file__).parent.parent / 'fixtures' / 'sim_fidelity' / 'profile.json'},seed=7",
    ],
)
def test_decode_runs_write_what_the_step_by_step_loop_writes(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    records, steps, none_taken = simulate(spec, False, monkeypatch)
    fast_records, fast_steps, taken = simulate(spec, True, monkeypatch)
    assert none_taken == 0 and taken > 0  # the comparison is between the two loops
    assert fast_records == records and fast_steps == steps
    if spec.startswith("sim:") and "kv_blocks=60" in spec:
        assert b'"preempt"' in steps  # the case meant to preempt did
