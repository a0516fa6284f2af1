"""One overloaded noisy-neighbour run on the simulator, shared by the recovery and warning tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

# noisy-neighbour at 22 req/s is about twice what one simulated H100 (Llama-3.1-8B, 32 slots) sustains on the
# plain roofline (calibration=none, which this overload was sized on): the noisy tenant's 512..1024-token outputs
# hold the slots while the queue grows. (On the calibrated default the shed guard's admitted p99 TTFT is 3.2 s.)
OVERLOAD = ("--workload", "noisy-neighbour", "--rate", "22", "--duration", "20", "--slo-ttft-ms", "2000")
PLAIN = "calibration=none"
ENGINES = {
    "fcfs": f"sim:{PLAIN},label=fcfs",
    "fair-shed": f"sim:{PLAIN},policy=fair,admission=shed,label=fair-shed",
    "fcfs-shed": f"sim:{PLAIN},admission=shed,label=fcfs-shed",
    "fcfs-fallback": f"sim:{PLAIN},fallback=fair,fallback_hold_s=1,label=fcfs-fallback",
}


@pytest.fixture(scope="session")
def overload_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("overload") / "run"
    argv = ["run", "--out", str(out), "--no-report", "--no-progress", *OVERLOAD]
    for spec in ENGINES.values():
        argv += ["--engine", spec]
    assert main(argv) == 0
    return out
