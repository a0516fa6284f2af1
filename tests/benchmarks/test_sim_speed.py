"""Simulator speed (`make bench`): the whole Azure conversation trace (19,366 requests, 58 minutes) and the
code trace (8,819) through the continuous simulator (Llama-3.1-8B on one H100, roofline), each in <= 20 s.

Times one engine run as `batchmark run` does it (records and the step trace written), not the metrics and
report that follow. The machine is shared: CPU time (what the simulation itself costs) is what the target
is held to; wall time and the load average are printed beside it, so a run on a busy machine says so.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from harness.engine_specs import parse_engine_specs
from harness.jsonl import JsonlWriter
from harness.loadgen import build_schedule
from harness.run import RunSettings, one_engine_run
from workloads import load_workload

pytestmark = pytest.mark.bench
TARGET_S = 20.0


@pytest.mark.parametrize("trace", ["azure-conv", "azure-code"])
def test_a_full_trace_simulates_within_the_target(benchmark, trace: str, tmp_path: Path) -> None:
    workload = load_workload(trace)
    spec = parse_engine_specs(["sim:model=llama-3.1-8b,hardware=h100"], {})[0]
    schedule = build_schedule(workload, 8192, (), 0, lengths_only=True)
    times: list[tuple[float, float]] = []

    def simulate() -> None:
        out = tmp_path / f"run-{len(times)}"
        out.mkdir()
        started, cpu = time.perf_counter(), time.process_time()
        with JsonlWriter(out / "records.jsonl") as records:
            outcome, _ = asyncio.run(
                one_engine_run(spec, None, schedule, records, out / "steps" / "t0.jsonl", RunSettings(out), 0)
            )
        times.append((time.perf_counter() - started, time.process_time() - cpu))
        assert outcome.records == len(workload.requests)

    benchmark.pedantic(simulate, rounds=1, iterations=1)
    wall, cpu = times[0]
    load = os.getloadavg()
    benchmark.extra_info.update(wall_s=wall, cpu_s=cpu, load_average=load)
    print(
        f"\n{trace}: {len(workload.requests):,} requests simulated in {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores)"
    )
    assert cpu <= TARGET_S
