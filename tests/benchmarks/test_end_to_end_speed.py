"""Two end-to-end speeds with a stated target (`make bench`): what a user waits for, from the command line.

- `batchmark serve` (embedded model, default options) from launch to its first `200` from `/health`; target
  under 10 s on a quiet 2-core machine (issue 32).
- `batchmark run --workload azure-conv --engine sim:model=llama-3.1-8b,hardware=h100` (one replica, the whole
  trace: records, step trace, metrics, report) from launch to exit; target at most 10 s wall (issue 35, item 4).

Each is run `ROUNDS` times in a fresh process; the median, the spread, the CPU time (the command's, with
the processes it waited for: serve's engine worker is not among them) and the load average are printed and
kept in the benchmark's extra_info. The targets are printed beside the figures, not asserted: on a shared
machine wall time says as much about the neighbours as about batchmark
(docs/measurements/2026-12-05-startup-and-sim-run.md and, for serve without transformers,
2026-12-05-serve-start-plain-torch.md have the figures).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.http.serve_process import ServeProcess

pytestmark = pytest.mark.bench
ROUNDS = int(os.environ.get("BATCHMARK_BENCH_ROUNDS", "3"))
TARGET_S = 10.0
SIM_RUN = ["run", "--workload", "azure-conv", "--engine", "sim:model=llama-3.1-8b,hardware=h100", "--no-progress"]
CONV_REQUESTS = 19_366


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _report(benchmark, what: str, walls: list[float], cpus: list[float]) -> None:
    load = os.getloadavg()
    median = statistics.median(walls)
    benchmark.extra_info.update(wall_s=walls, cpu_s=cpus, median_wall_s=median, load_average=load)
    print(
        f"\n{what}: median {median:.1f} s wall (min {min(walls):.1f}, max {max(walls):.1f}, {len(walls)} runs), "
        f"median {statistics.median(cpus):.1f} s CPU; target {TARGET_S:g} s wall; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores"
    )


def test_serve_answers_health(benchmark) -> None:
    walls: list[float] = []
    cpus: list[float] = []

    def start_once() -> None:
        cpu, started = _children_cpu_s(), time.perf_counter()
        server = ServeProcess()
        try:
            url = server.wait_ready()
            with urllib.request.urlopen(f"{url}/health", timeout=10) as answer:
                assert answer.status == 200
            walls.append(time.perf_counter() - started)
        finally:
            code, lines = server.stop()
        cpus.append(_children_cpu_s() - cpu)  # the server's own: its engine worker ends after it, not waited for
        assert code == 0, lines
        assert "(forked with the model)" in lines  # the fast path, not a second load of the model

    benchmark.pedantic(start_once, rounds=ROUNDS, iterations=1)
    _report(benchmark, "batchmark serve to /health", walls, cpus)


def test_sim_run_of_the_conv_trace(benchmark, tmp_path: Path) -> None:
    walls: list[float] = []
    cpus: list[float] = []

    def run_once() -> None:
        out = tmp_path / f"run-{len(walls)}"
        cpu, started = _children_cpu_s(), time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *SIM_RUN, "--out", str(out)], capture_output=True, text=True
        )
        walls.append(time.perf_counter() - started)
        cpus.append(_children_cpu_s() - cpu)
        assert done.returncode == 0, done.stderr[-2000:]
        with (out / "records.jsonl").open("rb") as records:
            assert sum(1 for _ in records) == CONV_REQUESTS
        assert (out / "metrics.json").stat().st_size > 0
        assert any((out / "steps").glob("*.jsonl"))

    benchmark.pedantic(run_once, rounds=ROUNDS, iterations=1)
    _report(benchmark, "batchmark run, azure-conv on one simulated H100", walls, cpus)
