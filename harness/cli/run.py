"""`batchmark run` (replay a workload against engines), `batchmark demo` (the default benchmark) and
`batchmark pd-sweep` (every prefill:decode split of N simulated GPUs as one run, ranked by goodput under the SLO)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli import args as shared


def register(sub: argparse._SubParsersAction) -> None:
    from workloads.bundled import BUNDLED

    run = sub.add_parser("run", help="replay a workload against one or more engines")
    shared.add_run_flags(run)
    run.set_defaults(run=run_command)
    demo = sub.add_parser(
        "demo",
        help="the default benchmark, sized to this machine: the Azure conversation trace, static vs continuous "
        "batching, about two minutes",
    )
    shared.add_run_flags(demo)
    demo.add_argument(
        "--at-scale",
        choices=(*BUNDLED, "none"),
        default="azure-conv",
        help="after the real comparison, this whole trace simulated for Llama-3.1-8B on one H100 at its recorded "
        "rate (default azure-conv); none skips it",
    )
    demo.set_defaults(run=demo_command, workload="azure-conv")
    pd = sub.add_parser(
        "pd-sweep",
        help="every P:D split of N simulated GPUs on one schedule; the one with the most goodput under the SLO",
    )
    shared.add_run_flags(pd)
    pd.add_argument("--gpus", type=int, required=True, help="GPUs to split between prefill and decode")
    pd.add_argument(
        "--replica",
        default="sim:model=llama-3.1-8b,hardware=h100",
        help="one replica, a sim: spec (default %(default)s); its tp is its GPUs",
    )
    pd.add_argument(
        "--disagg",
        default="",
        metavar="KEY=VALUE,...",
        help="options of every split (link, bandwidth_gbps, latency_us, decode_hardware; docs/cluster.md)",
    )
    pd.add_argument(
        "--no-colocated",
        dest="colocated",
        action="store_false",
        help="leave out the colocated cluster of the same GPUs (run by default, to compare)",
    )
    pd.set_defaults(run=pd_sweep_command, workload="azure-conv")


def execute(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    from engines import compute_threads
    from harness.console import print_summary
    from harness.run import run_benchmark

    shared.check_run_flags(args)  # every flag, before any work
    specs = shared.engine_specs(args)
    if any(spec.in_process for spec in specs):  # torch only for engines that compute on it: importing it takes seconds
        compute_threads.configure(args.threads)
    shared.executor_choice(args)  # Ray missing or its head unreachable: one line before the workload loads
    workload, _ = shared.load_run_workload(args, specs)
    settings = shared.run_settings(args, workload)
    offered = workload.describe()["mean_rate_rps"]
    closed = settings.scenario.kind == "closed"
    load = "closed loop" if closed else (f"offered {offered:.3f} req/s" if offered else "one burst")
    with shared.executor_from_args(args, specs, len(workload.requests)) as executor:
        print(
            f"workload {workload.name}: {len(workload.requests)} requests, {load}, "
            f"fingerprint {workload.fingerprint()[:16]}"
        )
        for note in workload.notes:
            print(f"  note: {note}")
        for line in _estimate(args, workload, specs, settings):
            print(line, flush=True)
        metrics = run_benchmark(workload, specs, settings, sys.argv, executor=executor)
    print_summary(metrics)
    if any(spec.simulated for spec in specs):
        from harness.metrics.simulation import manifest_notices

        for line in manifest_notices(json.loads((settings.out_dir / "manifest.json").read_text(encoding="utf-8"))):
            print(line)
    if settings.report:
        _write_report(settings.out_dir)
    return settings.out_dir, metrics


def _estimate(args: argparse.Namespace, workload: Any, specs: list[Any], settings: Any) -> list[str]:
    """How long the run will take and which engine it will drown, said before it starts (harness/estimate.py)."""
    from harness.estimate import estimate_run, load_speed

    speed = load_speed(args.model, args.dtype) if any(s.in_process for s in specs) else None
    stop = settings.stop_rules.max_run_s
    return estimate_run(workload, specs, settings.scenario.kind, settings.repeat, stop, speed)


def _write_report(out: Path) -> None:
    from reports import analyse, markdown_summary, write_report

    analysis = analyse([out])
    (out / "summary.md").write_text(markdown_summary(analysis))
    path = write_report(analysis, out / "report.html")
    print(f"report: {path.resolve()}")


def pd_sweep_command(args: argparse.Namespace) -> int:
    from harness.cli.args import slo_from_args
    from harness.errors import HarnessInputError
    from harness.metrics.slo import describe_limits
    from harness.pd_sweep import format_sweep, rank_splits, sweep_specs

    if args.engines:
        raise HarnessInputError("pd-sweep: --engine is not taken: the sweep makes its engines from --replica")
    splits = sweep_specs(args.gpus, args.replica, args.disagg, args.colocated)
    args.engines = [spec for _, spec in splits]
    out, metrics = execute(args)
    slo = slo_from_args(args)
    result = rank_splits([split for split, _ in splits], metrics["engines"])
    (out / "pd_sweep.json").write_text(
        json.dumps(
            {"gpus": args.gpus, "replica": args.replica, "disagg": args.disagg, "slo": slo.to_json(), **result},
            indent=2,
        )
        + "\n"
    )
    # the ranking is by request goodput: a job limit (--slo-job-s) is not one of its limits, and is said apart
    for line in format_sweep(result, describe_limits(dataclasses.replace(slo, job_s=None).to_json())):
        print(line)
    if slo.job_s is not None:
        print(
            f"job SLO ({describe_limits({'job_s': slo.job_s})}): not in the ranking, which is by request goodput; "
            "each split's job attainment is in metrics.json (`jobs`, for workloads of sessions)"
        )
    print(f"run directory: {out.resolve()}")
    return 0


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
    """The Azure conversation trace against static and continuous batching, sized to this machine (harness.demo);
    then the whole trace at its real rate, simulated for Llama-3.1-8B on one H100 (harness/demo_at_scale.py)."""
    from harness import demo
    from harness.demo_at_scale import simulate_at_scale

    chosen = [flag for flag, dest in SHAPING.items() if getattr(args, dest) is not None]
    for name, value in {"slo_ttft_ms": demo.SLO_TTFT_MS, "slo_tpot_ms": demo.SLO_TPOT_MS}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    plan_lines: list[str] = []
    if chosen or args.workload != demo.TRACE:
        print(f"demo: no calibration ({', '.join(chosen) or '--workload'} given): the load is yours")
    else:
        plan_lines = _calibrated(args)
    out, _ = execute(args)
    for line in plan_lines:
        print(line)
    if not args.no_report:
        _closing(out)
    print(f"run directory: {out.resolve()}")
    # then the question users ask next: the same schedulers for a real model on a real GPU, simulated
    if args.at_scale != "none":
        scale = simulate_at_scale(out.with_name(f"{out.name}-simulated-h100"), workload=args.at_scale)
        if not args.no_report:
            _write_report(scale)
    return 0


# The workload flags that shape the load; when any is given the demo replays what was asked instead.
SHAPING = {
    "--start": "start_s",
    "--duration": "duration_s",
    "--time-scale": "time_scale",
    "--rate": "rate",
    "--first": "first",
    "--requests": "requests",
}


def _calibrated(args: argparse.Namespace) -> list[str]:
    """Measure this machine, then set the workload flags and threads of `args` to the load it can carry."""
    from engines import compute_threads
    from engines.model.loader import load_model
    from harness import demo
    from harness.estimate import save_speed
    from harness.machine import measured
    from workloads import load_workload

    compute_threads.configure(args.threads)
    loaded = load_model(args.model, dtype=args.dtype)  # cached: the run itself loads it again at no cost
    sample = load_workload(demo.TRACE, start_s=demo.TRACE_START_S, first=200, max_context=16384)
    mean_prompt, mean_output, arrivals = demo.slice_stats(sample)
    print("demo: calibrating this machine (a few seconds) ...", flush=True)
    with measured() as noise:
        speed = demo.calibrate(loaded, [r.input_tokens for r in sample.requests], threads=args.threads)
    save_speed(args.model, args.dtype, speed.prefill_tok_s, speed.decode_tok_s)  # the next run's estimate
    plan = demo.plan(speed, mean_prompt, mean_output, arrivals)
    for name, value in plan.overrides().items():
        setattr(args, name, value)
    args.threads = speed.threads
    if args.stop_run_s is None:
        args.stop_run_s = plan.max_run_s
    lines = plan.describe(speed)
    if noise.get("busy"):  # said before the run: its numbers will carry the neighbours' load
        lines.append(f"  ! the calibration {noise['message']}: the demo's numbers will be noisy")
    for line in lines:
        print(line)
    return lines


def _closing(out: Path) -> None:
    """What the demo showed, from its report's verdict, and where to look in the report."""
    from reports import analyse
    from reports.verdict import cell, formatter

    analysis = analyse([out])
    heads = {h.key: h for h in analysis.verdict.headlines}
    report = (out / "report.html").resolve()
    print("")
    print("what this showed:")
    for key in ("ttft_p99", "goodput_rps"):
        h = heads.get(key)
        if h is None:
            continue
        cells = [f"{label} {cell(e, formatter(h))}" for label, e in h.estimates.items()]
        values = {e.value for e in h.estimates.values() if e.value is not None}
        if h.winner and len(values) == 1 and len(h.estimates) > 1:
            verdict = "tied"
        elif h.winner and h.clear:
            verdict = f"{h.winner} wins by {h.margin}: the 95% intervals do not overlap"
        elif h.winner:
            verdict = f"{h.winner} ahead, but the 95% intervals overlap: too close to call on this run"
        else:
            verdict = "no winner"
        print(f"  {h.name}: {'; '.join(cells)}. {verdict}.")
    for flag in analysis.verdict.flags:
        if flag["name"] in ("stopped_early", "busy_machine", "steady_rates_undefined"):
            print(f"  ! {flag['series']}: {flag['message']}")
    print("where to look in the report:")
    print(f"  {report}#summary   the verdict: every headline metric with its interval, and the validity flags")
    print(f"  {report}#timeline  the same requests in both engines: under static batching new arrivals wait for")
    print("                        the whole running batch (grey), finished members hold their slots (pink)")
    print(f"  {report}#occupancy slots computing vs held idle, step by step, from the engines' step traces")
    print(f"  {report}#latency   TTFT and E2E distributions from the scheduled arrival (no coordinated omission)")
