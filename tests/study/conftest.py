"""One overloaded noisy-neighbour run per cost model on the simulator, shared by the recovery and warning tests."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from harness.cli import main

# Each cost model of one simulated H100 (Llama-3.1-8B, 32 slots) is offered twice its capacity: the request rate
# noisy-neighbour completes offline on it (every request at once, slots always full), measured by
#   batchmark run --workload noisy-neighbour --scenario offline --engine sim:calibration=none --no-report --out D
#   batchmark run --workload noisy-neighbour --scenario offline --engine sim --no-report --out D
# (metrics.json: runs[0].summary.throughput.whole_run.request_rate; docs/study.md, "Recovery controls").
# The noisy tenant's 512..1024-token outputs hold the slots while the queue grows.
CAPACITY = {"plain": 8.94, "calibrated": 6.84}  # req/s offline
COST_MODEL = {"plain": "calibration=none,", "calibrated": ""}  # "": the default, calibrated on public GPU times
ARMS = {
    "fcfs": "label=fcfs",
    "fair-shed": "policy=fair,admission=shed,label=fair-shed",
    "fcfs-shed": "admission=shed,label=fcfs-shed",
    "fcfs-fallback": "fallback=fair,fallback_hold_s=1,label=fcfs-fallback",
}


def overload_argv(model: str) -> list[str]:
    """The run: 20 s of noisy-neighbour at twice `model`'s capacity, SLO 2 s, every arm on that cost model."""
    rate = f"{2 * CAPACITY[model]:.2f}"
    argv = ["--workload", "noisy-neighbour", "--rate", rate, "--duration", "20", "--slo-ttft-ms", "2000"]
    for arm in ARMS.values():
        argv += ["--engine", f"sim:{COST_MODEL[model]}{arm}"]
    return argv


@pytest.fixture(scope="session", params=list(CAPACITY))
def overload_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made once per test session, even across xdist workers (each has its own session, and the recovery and
    warning modules may land on two of them): the first worker to need a cost model's run makes it under a
    lock, in the directory this session's workers share, and the others read it."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-N/, above this worker's popen-gwK/: this session's alone
    out = shared / f"overload-{request.param}" / "run"
    with open(shared / f"overload-{request.param}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not out.exists():
            making = tmp_path_factory.mktemp(f"overload-{request.param}-making") / "run"
            argv = ["run", "--out", str(making), "--no-report", "--no-progress", *overload_argv(request.param)]
            assert main(argv) == 0
            out.parent.mkdir(exist_ok=True)
            making.rename(out)  # whole or absent: another worker never reads a run still being written
    return out
