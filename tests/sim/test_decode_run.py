"""Decode runs (engines/sim/decode_run.py) change how fast the simulator runs, never what it writes: the same
request records and step trace, byte for byte, as the step-by-step loop; through preemptions, prefix-cache hits
and evictions, and behind a cluster's router; for static batches too, with finished members holding their slots,
batches deferred for KV blocks, formation timeouts and a queue that grows while a batch runs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import engines.sim.decode_run
import engines.sim.static_step
from engines.api import Request
from engines.sequence import SequenceStatus
from engines.sim.engine import SimEngine
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop

PROFILE = Path(__file__).parent.parent / "fixtures" / "sim_fidelity" / "profile.json"


def schedule() -> list[Scheduled]:
    """Prompts that share a 64-token system prefix (prefix hits), of mixed lengths, arriving in bursts."""
    items = []
    for i in range(48):
        prompt = list(range(64)) + [1000 + i] * (16 + 37 * (i % 7))
        items.append(Scheduled(Request(f"r{i}", prompt, 20 + 23 * (i % 5), ignore_eos=True), 0.02 * (i // 6)))
    return items


def simulate(
    spec: str, decode_runs: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, bytes, list[tuple[int, int]]]:
    """(records, step trace, decode runs taken: of each, the slots held by finished members and the requests
    waiting; a static batch's finishing steps run without a plan count as (-1, -1)) of one run of `schedule()`
    on `spec`."""
    monkeypatch.setattr(SimEngine, "decode_runs", decode_runs)
    runs: list[tuple[int, int]] = []
    real = engines.sim.decode_run.run_decode

    def counted(engine: SimEngine, *rest: object) -> tuple[list[str], list[float]]:
        scheduler = engine.scheduler
        runs.append((sum(seq.status is SequenceStatus.FINISHED for seq in scheduler.running), len(scheduler.waiting)))
        return real(engine, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr("engines.sim.engine.run_decode", counted)
    finishing = engines.sim.static_step.finishing_step
    monkeypatch.setattr("engines.sim.engine.finishing_step", lambda *a: runs.append((-1, -1)) or finishing(*a))
    (parsed,) = parse_engine_specs([spec], {})
    engine = build_engine(parsed, None)
    steps: list[bytes] = []
    if isinstance(engine, SimEngine):
        engine.set_step_sink(lambda record: steps.append(orjson.dumps(record)))
    records: list[bytes] = []
    run_virtual_open_loop(engine, schedule(), lambda r: records.append(orjson.dumps(r.to_json())), label="e")
    return b"\n".join(records), b"\n".join(steps), runs


@pytest.mark.parametrize(
    "spec",
    [
        "sim:model=llama-3.1-8b,hardware=h100,kv_blocks=60",  # a pool so small that sequences are preempted
        "sim:model=llama-3.1-8b,hardware=h100,kv_blocks=200,max_running=8",  # prefix hits, evictions, a queue
        "cluster:replicas=3,router=cache_aware,replica=sim:model=llama-3.1-8b,hardware=h100,kv_blocks=200",
        # a fitted profile with its measured noise: the clock of a decode run drawn step by step
        f"sim:profile={PROFILE},seed=7",
        # static batches: a pool too small for two of them at once (a batch deferred for KV blocks)
        "sim:model=llama-3.1-8b,hardware=h100,scheduler=static,max_batch=8,kv_blocks=60",
        # batches cut by a short formation timeout, no prefix cache, an injected slowdown
        "sim:model=llama-3.1-8b,hardware=h100,scheduler=static,max_batch=16,batch_timeout_ms=5,prefix_caching=off,"
        "slowdown=0.1",
        "cluster:replicas=2,router=cache_aware,replica=sim:model=llama-3.1-8b,hardware=h100,scheduler=static,max_batch=6",
        f"sim:profile={PROFILE},seed=7,scheduler=static,max_batch=8",  # the measured noise, the fitted prices
    ],
)
def test_decode_runs_write_what_the_step_by_step_loop_writes(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    records, steps, none_taken = simulate(spec, False, monkeypatch)
    fast_records, fast_steps, taken = simulate(spec, True, monkeypatch)
    assert not none_taken and taken  # the comparison is between the two loops
    assert fast_records == records and fast_steps == steps
    if "scheduler=static" in spec:  # runs with a finished member holding its slot and without, with a queue
        decode_runs = [run for run in taken if run != (-1, -1)]
        assert any(held for held, _ in decode_runs) and not all(held for held, _ in decode_runs)
        assert any(waiting for _, waiting in decode_runs)
        assert (-1, -1) in taken  # and finishing steps
        if "kv_blocks=60" in spec:
            assert b'"why":"kv_blocks"' in steps  # the case meant to defer a batch for KV blocks did
    elif spec.startswith("sim:") and "kv_blocks=60" in spec:
        assert b'"preempt"' in steps  # the case meant to preempt did
