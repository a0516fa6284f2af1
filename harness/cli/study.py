"""`batchmark study PLAN.toml`: a baseline and one-assumption variants on the identical schedules, judged
by an acceptance plan written before the run (docs/study.md). Writes study.json, manifest.json (with the
plan's SHA-256) and study.html under `--out`, one run directory per unit under `units/`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli import args as shared

MAX_UNITS = 1000  # units a study runs without --yes: past this a plan's grid is more likely a slip than a wish


def register(sub: argparse._SubParsersAction) -> None:
    study = sub.add_parser(
        "study",
        help="baseline vs one-assumption variants, picked on a tuning slice and "
        "confirmed on a held-out one, as an acceptance plan says",
    )
    study.add_argument("plan", type=Path, help="the acceptance plan (TOML, docs/study.md)")
    study.add_argument(
        "--sim", action="store_true", help="run every arm on the simulator (sim:...) instead of the plan's engine kind"
    )
    study.add_argument("--trials", type=int, help="override the plan's trials (the plan's hash still records it)")
    study.add_argument("--out", type=Path, help="study directory (default runs/<time>-study-<plan>)")
    study.add_argument("--yes", action="store_true", help=f"run a study of more than {MAX_UNITS} units")
    study.add_argument("--no-report", action="store_true", help="skip study.html")
    shared.add_model_flags(study)
    shared.add_executor_flags(study, workers=False)
    study.set_defaults(run=study_command)


def study_command(args: argparse.Namespace) -> int:
    import dataclasses
    import time

    from engines import compute_threads
    from harness.errors import HarnessInputError
    from harness.manifest import build_manifest
    from harness.study.classes import class_panels, format_class_panels
    from harness.study.guards import study_flags
    from harness.study.pairing import mark_pairings
    from harness.study.plan import MAX_TRIALS, load_plan
    from harness.study.runner import PICTURE, execute, executor_map, plan_units, save_json
    from harness.study.variants import resolve, simulated
    from harness.study.verdict import decide
    from workloads import load_workload

    shared.executor_choice(args)  # Ray missing or its head unreachable: one line before any work
    plan = load_plan(args.plan)
    if args.trials is not None:
        if not 1 <= args.trials <= MAX_TRIALS:
            raise HarnessInputError(f"--trials {args.trials}: must be 1..{MAX_TRIALS}")
        plan = dataclasses.replace(plan, trials=args.trials)
    if args.out is not None:
        shared.writable_dir(args.out, "--out")  # before any unit runs: a run must not fail at its first write
    base = simulated(plan.baseline) if args.sim else plan.baseline
    arms = resolve(base, list(plan.variants))
    from harness.engine_specs import parse_engine_specs

    specs = parse_engine_specs([a.spec for a in arms], {"admission_slo_ms": 1.0})  # every arm's options checked first
    units_n = len(arms) * len(plan.slices) * plan.trials
    replay_s = len(arms) * plan.trials * sum(s.end_s - s.start_s for s in plan.slices)
    estimate = (
        f"{len(arms)} arms x {len(plan.slices)} slices x {plan.trials} trials = {units_n:,} units, "
        f"{replay_s / 3600:,.1f} h of trace to replay (divided by the workload's time scale; simulated arms faster)"
    )
    if units_n > MAX_UNITS and not args.yes:  # a grid of 12,040 units once started with no warning
        raise HarnessInputError(f"study {plan.path}: {estimate}: more than {MAX_UNITS} units; add --yes to run it")
    print(f"estimate: {estimate}", flush=True)
    workload = load_workload(plan.workload, **{**plan.workload_options, "seed": plan.seed})
    from harness.loadgen.classes import check_request_classes, run_classes
    from harness.metrics.slo_classes import parse_slo_class

    classes, _ = run_classes(workload, [parse_slo_class(text) for text in plan.slo_classes])
    check_request_classes(workload, classes)  # before any unit
    last = max((r.arrival_s for r in workload.requests), default=0.0)
    for window in plan.slices:  # an empty slice has no metrics to compare: every verdict would be n/a
        if not any(window.start_s <= r.arrival_s < window.end_s for r in workload.requests):
            raise HarnessInputError(
                f"{plan.path}: field slices.{window.name}: no request of {plan.workload} arrives in "
                f"{window.start_s:g}-{window.end_s:g} s (its arrivals span 0-{last:g} s)"
            )
    if any(spec.in_process for spec in specs):  # torch only for arms that compute on it, as `run` does
        compute_threads.configure(args.threads)
    out = args.out or shared.default_out("study", args.plan.stem)
    out.mkdir(parents=True, exist_ok=True)
    manifest = build_manifest(
        argv=sys.argv,
        workload=workload,
        engines=[],
        model=None,
        seed=plan.seed,
        settings={"plan": plan.to_json(), "simulated": args.sim},
    )
    manifest["plan_sha256"] = plan.sha256
    manifest["arms"] = [dataclasses.asdict(a) for a in arms]
    save_json(out / "manifest.json", manifest)
    units = plan_units(plan, arms, out, args.model)
    metrics = list(dict.fromkeys([m.metric for m in plan.metrics] + [plan.pick, *PICTURE]))
    print(
        f"study {plan.path}: {len(arms)} arms x {len(plan.slices)} slices x {plan.trials} trials = {len(units)} "
        f"runs; plan sha256 {plan.sha256[:16]}"
    )
    started = time.perf_counter()
    done: list[dict[str, Any]] = []

    def progress(result: dict[str, Any]) -> None:
        done.append(result)
        pick = result["metrics"].get(plan.pick.label)
        shown = "-" if pick is None else f"{pick:.4g}"
        print(
            f"  [{len(done)}/{len(units)}] {result['arm']:<16} {result['slice']:<9} t{result['trial']} "
            f"{plan.pick.label} {shown} ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        save_json(out / "study.json", _document(plan, arms, done, None, manifest))

    cpus = 1.0 if all(a.spec.startswith("sim") for a in arms) else float(args.threads or 1)
    with shared.executor_from_args(args) as executor:
        manifest["executor"] = executor.describe()
        save_json(out / "manifest.json", manifest)
        results = execute(units, map_fn=executor_map(executor, cpus), on_result=progress)
    mark_pairings(results)  # which arms' trials replayed the baseline's schedule (the judge's pairing)
    verdict = decide(plan, results, metrics)
    verdict["flags"] = study_flags(plan, arms, workload, results, units[0].slo_ttft_s, units[0].slo_tpot_s, classes)
    verdict["classes"] = class_panels(results, [c.name for c in classes])  # the spec's and the plan's
    save_json(out / "study.json", _document(plan, arms, results, verdict, manifest))
    from harness.study.table import format_study

    print(format_study(verdict, metrics))
    if verdict["classes"]:
        print(format_class_panels(verdict["classes"]))
    for line in verdict["lines"]:
        print(line)
    for flag in verdict["flags"]:
        print(f"flag: {flag}")
    if not args.no_report:
        from reports.study import write_study_report

        print(f"report: {write_study_report(out).resolve()}")
    print(f"study directory: {out.resolve()}")
    return 0


def _document(
    plan: Any, arms: list[Any], results: list[dict[str, Any]], verdict: dict[str, Any] | None, manifest: dict[str, Any]
) -> dict[str, Any]:
    import dataclasses

    return {
        "schema_version": 1,
        "plan": plan.to_json(),
        "plan_sha256": plan.sha256,
        "arms": [dataclasses.asdict(a) for a in arms],
        "units": results,
        "verdict": verdict,
        "git": manifest.get("git"),
    }
