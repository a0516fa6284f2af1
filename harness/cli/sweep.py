"""`batchmark sweep`: offered-load sweep and capacity search for one engine or several paired ones.

Every rate is a full `batchmark run` (its own run directory under the sweep directory); engines at one
rate replay the identical schedule. Without `--rates` the sweep first measures the saturation
throughput (every request due at once), then spreads rates below it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from harness.cli import args as shared


def _rates(text: str) -> tuple[float, ...]:
    try:
        rates = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated req/s values, got {text!r}") from None
    if not rates or min(rates) <= 0:
        raise argparse.ArgumentTypeError(f"rates must be > 0, got {text!r}")
    return rates


def register(sub: argparse._SubParsersAction) -> None:
    sweep = sub.add_parser("sweep", help="offered-load sweep: throughput-latency curve and capacity under the SLO")
    shared.add_run_flags(sweep)
    sweep.add_argument("--rates", type=_rates, metavar="R1,R2,...", help="offered rates in req/s (default: automatic)")
    sweep.add_argument("--points", type=int, default=6, help="automatic: how many rates to spread (default 6)")
    sweep.add_argument(
        "--low-fraction",
        type=float,
        default=0.1,
        help="automatic: lowest rate as a share of the saturation throughput (default 0.1)",
    )
    sweep.add_argument(
        "--extend",
        type=int,
        default=3,
        help="automatic: climb up to N rates past the saturation while an engine keeps up (default 3)",
    )
    sweep.add_argument("--spacing", choices=("geometric", "linear"), default="geometric", help="automatic rates")
    sweep.add_argument(
        "--percentile",
        type=float,
        default=90.0,
        help="a rate meets the SLO when this %% of requests meet every limit (default 90)",
    )
    sweep.add_argument(
        "--search",
        choices=("climb", "binary"),
        default="climb",
        help="binary: narrow each engine's capacity bracket after the climb",
    )
    sweep.add_argument("--search-steps", type=int, default=4, help="binary search: at most this many runs per engine")
    sweep.add_argument(
        "--tolerance",
        type=float,
        default=0.05,
        help="binary search: stop at this relative bracket width (default 0.05)",
    )
    sweep.set_defaults(run=sweep_command)


def _plan(args: argparse.Namespace) -> Any:
    from harness.errors import HarnessInputError
    from harness.sweep import SweepPlan

    if args.rate is not None:
        raise HarnessInputError("sweep: --rate sets one load; give the sweep's rates with --rates R1,R2,...")
    checks = {
        "--points": args.points >= 2,
        "--low-fraction": 0 < args.low_fraction < 1,
        "--percentile": 0 < args.percentile <= 100,
        "--search-steps": args.search_steps >= 1,
        "--tolerance": args.tolerance > 0,
        "--extend": args.extend >= 0,
    }
    for flag, ok in checks.items():
        if not ok:
            raise HarnessInputError(f"sweep: {flag} {getattr(args, flag[2:].replace('-', '_'))} is out of range")
    return SweepPlan(
        rates=tuple(sorted(set(args.rates or ()))),
        points=args.points,
        low_fraction=args.low_fraction,
        spacing=args.spacing,
        percentile=args.percentile,
        search=args.search,
        search_steps=args.search_steps,
        tolerance=args.tolerance,
        extend=args.extend,
    )


def sweep_command(args: argparse.Namespace) -> int:
    from engines import compute_threads
    from harness.errors import HarnessInputError
    from harness.run import load_model_for, run_benchmark, run_units, unit_cpus
    from harness.sweep import capacity_lines, format_table, run_sweep
    from workloads import load_workload

    shared.check_run_flags(args)  # every flag, before any work
    plan = _plan(args)
    specs = shared.engine_specs(args)
    if any(spec.in_process for spec in specs):  # torch only for engines that compute on it, as `run` does
        compute_threads.configure(args.threads)
    shared.executor_choice(args)  # Ray missing or its head unreachable: one line before the workload loads
    base, overrides = shared.load_run_workload(args, specs)
    settings = shared.run_settings(args, base)
    if settings.scenario.kind != "open":
        raise HarnessInputError(f"sweep: a {settings.scenario.kind} loop has no offered rate to sweep; use open")
    out = args.out or shared.default_out("sweep", base.name)

    def load(rate: float | None) -> Any:
        return base if rate is None else load_workload(args.workload, **{**overrides, "rate": rate})

    with shared.executor_from_args(args, specs, len(base.requests)) as executor:
        here = executor.kind == "local"
        loaded = load_model_for(specs, settings) if here else None  # once, not once per rate

        def run_one(workload: Any, engine_specs: Any, run_dir: Path) -> None:
            if not here:
                return run_units(executor, [(workload, engine_specs, run_dir)], settings, sys.argv)
            one = dataclasses.replace(settings, out_dir=run_dir, report=False)
            run_benchmark(workload, list(engine_specs), one, sys.argv, loaded=loaded, executor=executor)

        def run_many(jobs: list[tuple[Any, Any, Path]]) -> None:
            run_units(executor, jobs, settings, sys.argv)

        batch = 1 if here else max(1, int(executor.slots // unit_cpus(specs, settings)))
        where = "here" if here else f"on Ray, up to {batch} rates at once"
        labels = ", ".join(s.label for s in specs)
        print(f"sweep of {base.name} ({len(base.requests)} requests per rate, {where}): {labels}")
        print(_estimate(args, plan, specs, settings, load), flush=True)
        data = run_sweep(plan, specs, load, run_one, out, settings.slo, sys.argv, run_many=run_many, batch=batch)
    print(format_table(data))
    for line in capacity_lines(data):
        print(line)
    print(f"sweep directory: {out.resolve()}")
    return 0


def _estimate(args: argparse.Namespace, plan: Any, specs: list[Any], settings: Any, load: Any) -> str:
    """How long the sweep's runs will take (harness/estimate.py); automatic rates are chosen as it goes."""
    from harness.estimate import estimate_sweep, load_speed

    if not plan.rates:
        return "estimate: automatic rates are chosen after a saturation run: the sweep's length is not known yet"
    speed = load_speed(args.model, args.dtype) if any(s.in_process for s in specs) else None
    workloads = [load(rate) for rate in plan.rates]
    return estimate_sweep(workloads, specs, settings.repeat, settings.stop_rules.max_run_s, speed)
