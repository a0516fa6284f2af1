"""`batchmark run` (replay a workload against engines) and `batchmark demo` (the default benchmark)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli import args as shared

# 9 s of Azure conv from minute 10 (about 40 requests, ~1,000-token prompts) replayed at 0.15x speed, so
# they arrive over a minute at ~0.7 req/s: more than static batching sustains with the embedded model on
# 2 cores, less than continuous batching does, so the scheduler decides the outcome.
DEMO_DEFAULTS: dict[str, Any] = {
    "workload": "azure-conv",
    "start_s": 600.0,
    "duration_s": 9.0,
    "time_scale": 0.15,
    "slo_ttft_ms": 2000.0,
    "slo_tpot_ms": 200.0,
}


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="replay a workload against one or more engines")
    shared.add_run_flags(run)
    run.set_defaults(run=run_command)
    demo = sub.add_parser(
        "demo", help="the default benchmark: an Azure conv slice, static vs continuous; then the whole trace simulated"
    )
    shared.add_run_flags(demo)
    demo.set_defaults(run=demo_command, workload=DEMO_DEFAULTS["workload"])


def execute(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    from engines import compute_threads
    from harness.console import print_summary
    from harness.run import run_benchmark

    shared.check_run_flags(args)  # every flag, before any work
    compute_threads.configure(args.threads)
    specs = shared.engine_specs(args)
    workload, _ = shared.load_run_workload(args, specs)
    settings = shared.run_settings(args, workload)
    offered = workload.describe()["mean_rate_rps"]
    closed = settings.scenario.kind == "closed"
    load = "closed loop" if closed else (f"offered {offered:.3f} req/s" if offered else "one burst")
    print(
        f"workload {workload.name}: {len(workload.requests)} requests, {load}, "
        f"fingerprint {workload.fingerprint()[:16]}"
    )
    for note in workload.notes:
        print(f"  note: {note}")
    metrics = run_benchmark(workload, specs, settings, sys.argv)
    print_summary(metrics)
    if any(spec.simulated for spec in specs):
        from harness.metrics.simulation import manifest_notices

        for line in manifest_notices(json.loads((settings.out_dir / "manifest.json").read_text(encoding="utf-8"))):
            print(line)
    if settings.report:
        _write_report(settings.out_dir)
    return settings.out_dir, metrics


def _write_report(out: Path) -> None:
    from reports import analyse, markdown_summary, write_report

    analysis = analyse([out])
    (out / "summary.md").write_text(markdown_summary(analysis))
    path = write_report(analysis, out / "report.html")
    print(f"report: {path.resolve()}")


def run_command(args: argparse.Namespace) -> int:
    from harness.console import run_failure

    out, metrics = execute(args)
    print(f"run directory: {out.resolve()}")
    problem = run_failure(metrics)
    if problem is None:
        return 0
    # exit 1, not 2: the input was fine, the run failed as a whole; its records are kept
    print(f"batchmark: error: {problem} (records kept in {out})", file=sys.stderr)
    return 1


def demo_command(args: argparse.Namespace) -> int:
    """Azure conv, a slice replayed faster than real time so the embedded model is loaded hard; then the
    whole trace at its real rate, simulated for Llama-3.1-8B on one H100 (harness/demo_at_scale.py)."""
    from harness.demo_at_scale import simulate_at_scale

    for name, value in DEMO_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    out, _ = execute(args)
    print(f"run directory: {out.resolve()}")
    scale = simulate_at_scale(out.with_name(f"{out.name}-simulated-h100"))
    if not args.no_report:
        _write_report(scale)
    return 0
