"""How the simulator's cost grows (`make bench`): 10k, 100k and 1M requests of one synthetic shape, and the whole
Azure conversation trace on 8 simulated H100 replicas behind a router.

Each times one engine run as `batchmark run` does it (request records and, for one engine, the step trace
written; not the metrics that follow). CPU time is what the targets hold (the machine is shared; wall time and
the load average are printed beside it):
- linear: a request of the 1M run costs at most 1.5x what one of the 10k run costs (the slope is printed);
- the 8-replica conv run within the single-replica conv target of `test_sim_speed.py` (20 s CPU), the time one
  replica took before decode runs (docs/simulator.md, "Speed").
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from engines.api import Request
from harness.engine_specs import parse_engine_specs
from harness.jsonl import JsonlWriter
from harness.loadgen import Scheduled, build_schedule
from harness.loadgen.replay import distinct_prompt
from harness.run import RunSettings, one_engine_run
from workloads import load_workload

pytestmark = pytest.mark.bench
H100 = "sim:model=llama-3.1-8b,hardware=h100"
RATE = 100.0  # requests per second: about 8 in flight on one H100 for this shape
PROMPT, OUTPUT = 256, 32
LINEAR = 1.5  # per-request cost at 1M over that at 10k
CLUSTER_TARGET_S = 20.0
_PER_REQUEST: dict[int, float] = {}


def synthetic(n: int) -> list[Scheduled]:
    """`n` requests of PROMPT tokens in, OUTPUT out, arriving evenly at RATE per second."""
    return [
        Scheduled(Request(f"s{i}", distinct_prompt(i, PROMPT), OUTPUT, ignore_eos=True), i / RATE) for i in range(n)
    ]


def simulate(spec_text: str, schedule: list[Scheduled], out: Path, trace: bool = True) -> tuple[float, float, int]:
    """(wall s, CPU s, records) of one engine run of `schedule`."""
    spec = parse_engine_specs([spec_text], {})[0]
    out.mkdir(parents=True)
    started, cpu = time.perf_counter(), time.process_time()
    with JsonlWriter(out / "records.jsonl") as records:
        steps = out / "steps" / "t0.jsonl" if trace else None
        outcome, _ = asyncio.run(one_engine_run(spec, None, schedule, records, steps, RunSettings(out), 0))
    return time.perf_counter() - started, time.process_time() - cpu, outcome.records


def report(benchmark, label: str, requests: int, wall: float, cpu: float) -> None:
    load = os.getloadavg()
    benchmark.extra_info.update(requests=requests, wall_s=wall, cpu_s=cpu, load_average=load)
    print(
        f"\n{label}: {requests:,} requests in {wall:.1f} s wall, {cpu:.1f} s CPU, {1e6 * cpu / requests:.1f} us CPU "
        f"a request (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores)"
    )


@pytest.mark.parametrize("n", [10_000, 100_000, 1_000_000])
def test_cost_grows_linearly_with_requests(benchmark, n: int, tmp_path: Path) -> None:
    schedule = synthetic(n)
    got: list[tuple[float, float, int]] = []
    benchmark.pedantic(lambda: got.append(simulate(H100, schedule, tmp_path / "run")), rounds=1, iterations=1)
    wall, cpu, records = got[0]
    assert records == n
    report(benchmark, f"synthetic {PROMPT} in / {OUTPUT} out at {RATE:g} r/s", n, wall, cpu)
    _PER_REQUEST[n] = cpu / n
    if n == 1_000_000 and 10_000 in _PER_REQUEST:
        slope = _PER_REQUEST[n] / _PER_REQUEST[10_000]
        print(f"per-request CPU, 1M over 10k: {slope:.2f} (1.00 is linear)")
        assert slope <= LINEAR


def test_the_conv_trace_on_eight_replicas_within_one_replicas_old_time(benchmark, tmp_path: Path) -> None:
    workload = load_workload("azure-conv")
    schedule = build_schedule(workload, 8192, (), 0, lengths_only=True)
    spec = f"cluster:replicas=8,router=least_outstanding,replica={H100}"
    got: list[tuple[float, float, int]] = []
    benchmark.pedantic(lambda: got.append(simulate(spec, schedule, tmp_path / "run")), rounds=1, iterations=1)
    wall, cpu, records = got[0]
    assert records == len(workload.requests)
    report(benchmark, "azure-conv on 8 replicas (least_outstanding)", records, wall, cpu)
    assert cpu <= CLUSTER_TARGET_S
