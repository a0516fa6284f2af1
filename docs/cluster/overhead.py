"""docs/cluster.md's Ray overhead per unit: the same units on the local executor and on a 2-CPU Ray
cluster started here (127.0.0.1), wall time per unit. Two kinds of unit: an empty one (what Ray itself
costs: scheduling, pickling, the result's way back) and a simulated run of chat-small (static vs
continuous, the run directory's files shipped back).

    .venv/bin/python docs/cluster/overhead.py [--empty 200] [--runs 8]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def empty(*, out_dir: Path | None) -> None:
    return None


def timed(executor: Any, units: list[Any]) -> float:
    started = time.perf_counter()
    for _ in executor.map(units):
        pass
    return time.perf_counter() - started


def main() -> int:
    import ray

    from harness.engine_specs import parse_engine_specs
    from harness.executor import LocalExecutor, Unit
    from harness.executor.ray_cluster import RayExecutor
    from harness.run import RunSettings, run_unit
    from workloads import load_workload

    parser = argparse.ArgumentParser()
    parser.add_argument("--empty", type=int, default=200)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", _node_ip_address="127.0.0.1")
    print(f"ray.init(num_cpus=2): {time.perf_counter() - started:.1f} s")
    try:
        cluster, local = RayExecutor(), LocalExecutor()
        tmp = Path(tempfile.mkdtemp(prefix="overhead-"))
        workload = load_workload("chat-small")
        specs = parse_engine_specs(["sim:scheduler=static", "sim"], {})
        settings = RunSettings(out_dir=tmp, report=False)
        timed(cluster, [Unit(empty) for _ in range(4)])  # the workers' first start is not a unit's cost
        for i in range(args.repeat):
            units = [Unit(empty) for _ in range(args.empty)]
            e_local, e_ray = timed(local, units), timed(cluster, units)
            runs = [
                Unit(run_unit, (workload, specs, settings, ["overhead"]), tmp / f"{i}-{kind}-{j}")
                for kind in ("local", "ray")
                for j in range(args.runs)
            ]
            r_local = timed(local, runs[: args.runs])
            r_ray = timed(cluster, runs[args.runs :])
            print(
                f"round {i}: empty unit local {e_local / args.empty * 1e3:.3f} ms, "
                f"ray {e_ray / args.empty * 1e3:.2f} ms ({args.empty} units, 2 at a time); "
                f"simulated chat-small run local {r_local / args.runs:.2f} s, "
                f"ray {r_ray / args.runs:.2f} s per unit ({args.runs} units); "
                + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
            )
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
