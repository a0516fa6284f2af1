"""The demo at scale: static against continuous batching for Llama-3.1-8B on one H100, simulated, over
the whole Azure conversation trace (19,366 requests, 58 minutes) at its recorded rate.

After `batchmark demo` has measured both schedulers on the embedded model, this answers the question
its users ask next: the same two schedulers, unchanged, in virtual time on the roofline cost model as
calibrated on public GPU step times (the simulator's default on an H100; docs/simulator.md; 31-33 s on a quiet
2-core machine, two thirds of it the continuous simulation, more on a busy one). Every line it prints says that
it is simulated.
"""

from __future__ import annotations

import json
from pathlib import Path

from engines.sim.calibration import DEFAULT_CALIBRATION
from harness.console import format_summary

MODEL, HARDWARE = "llama-3.1-8b", "h100"
ENGINES = (f"sim:scheduler=static,model={MODEL},hardware={HARDWARE}", f"sim:model={MODEL},hardware={HARDWARE}")


def simulate_at_scale(out: Path, *, workload: str = "azure-conv") -> Path:
    """Simulate static and continuous batching on `workload` into the run directory `out` (no report:
    the CLI writes it); print the comparison, labelled as simulated, with the cost model's parameters."""
    from harness.engine_specs import parse_engine_specs
    from harness.metrics.simulation import manifest_notices
    from harness.run import RunSettings, run_benchmark
    from workloads import load_workload

    trace = load_workload(workload)
    specs = parse_engine_specs(list(ENGINES), {})
    print(
        f"\nSIMULATED at scale: {trace.name}, all {len(trace.requests):,} requests at the recorded rate, static vs "
        f"continuous batching for {MODEL} on one {HARDWARE.upper()} (virtual time, roofline cost model calibrated "
        f"on public GPU step times: {DEFAULT_CALIBRATION})"
    )
    settings = RunSettings(out_dir=out, report=False, n_boot=200)
    argv = ["batchmark", "demo", "(simulated at scale)", *[a for e in ENGINES for a in ("--engine", e)]]
    metrics = run_benchmark(trace, specs, settings, argv)
    print(format_summary(metrics).replace("\n", "\n  ").join(["  ", ""]))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for line in manifest_notices(manifest):
        print(f"  {line}")
    took = " and ".join(f"{o.get('simulation_wall_s', 0.0):.1f} s" for o in manifest["outcomes"])
    gpu_minutes = sum(o["wall_time_s"] for o in manifest["outcomes"]) / 60
    print(f"  simulated {gpu_minutes:.1f} GPU-minutes; the simulations took {took} (side by side where cores allow)")
    return out
