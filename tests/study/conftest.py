"""One overloaded noisy-neighbour run on the simulator, shared by the recovery and warning tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

# noisy-neighbour at 22 req/s is about twice what one simulated H100 (Llama-3.1-8B, 32 slots) sustains:
# the noisy tenant's 512..1024-token outputs hold the slots while the queue grows.
OVERLOAD = ("--workload", "noisy-neighbour", "--rate", "22", "--duration", "20", "--slo-ttft-ms", "2000")
ENGINES = {
    "fcfs": "sim:label=fcfs",
    "fair-shed": "sim:policy=fair,admission=shed,label=fair-shed",
    "fcfs-shed": "sim:admission=shed,label=fcfs-shed",
    "fcfs-fallback": "sim:fallback=fair,fallback_hold_s=1,label=fcfs-fallback",
}


@pytest.fixture(scope="session")
def overload_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("overload") / "run"
    argv = ["run", "--out", str(out), "--no-report", "--no-progress", *OVERLOAD]
    for spec in ENGINES.values():
        argv += ["--engine", spec]
    assert main(argv) == 0
    return out
