"""`batchmark calibrate`: the gate's false-alarm rate (A/A pairs) and detection rate (injected slowdown).

Exit 0 when both targets are met (their 95% intervals inside the targets), 1 when either is missed, 2 on invalid
input, 3 when the pairs cannot tell (an interval straddles a target: run more pairs).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli import args as shared

DEFAULT_RULE = "tpot.p50 <= +5%"
_OUTCOME_TEXT = {
    "met": "met (both 95% intervals inside the targets)",
    "missed": "MISSED",
    "cannot tell": "cannot tell (a 95% interval straddles a target; run more pairs)",
}


CALIBRATE_FLAGS: tuple[shared.Flag, ...] = (
    shared.Flag("--pairs", int, "pairs of each kind", default=20, low=1, high=10_000, metavar="N"),
    shared.Flag(
        "--slowdown",
        float,
        "injected per-step slowdown (0.10 = 10%)",
        default=0.10,
        low=0,
        above=True,
        high=100,
        metavar="SHARE",
    ),
    shared.Flag(
        "--trials",
        int,
        "interleaved trials per pair, order alternating; from --min-trials on, the gate judges trials",
        default=24,
        low=1,
        high=10_000,
        metavar="N",
    ),
    shared.Flag("--max-false-alarm", float, "target", default=0.05, low=0, high=1, metavar="SHARE"),
    shared.Flag("--min-detection", float, "target", default=0.95, low=0, high=1, metavar="SHARE"),
)


def register(sub: argparse._SubParsersAction) -> None:
    cal = sub.add_parser("calibrate", help="gate calibration: A/A false alarms and injected-slowdown detections")
    shared.add_run_flags(cal)
    shared.add_flags(cal, CALIBRATE_FLAGS)
    cal.add_argument(
        "--concurrent",
        action="store_true",
        help="run each pair's two sides at the same instant in two worker processes (shared machines)",
    )
    cal.add_argument("--rules", type=Path, metavar="FILE", help="gate rules file (default: one rule, see --rule)")
    cal.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="RULE",
        help=f"gate rule (repeatable; default {DEFAULT_RULE!r})".replace("%", "%%"),
    )
    shared.add_gate_flags(cal)
    cal.set_defaults(run=calibrate_command)


def calibrate_command(args: argparse.Namespace) -> int:
    from engines import compute_threads
    from harness.calibrate import ConcurrentReplay, InProcessReplay, PairSource, calibrate
    from harness.errors import HarnessInputError
    from harness.gate.calibration import CalibrationPlan
    from workloads import load_workload

    shared.check_run_flags(args)  # every flag, before any work
    shared.check_flags(args, CALIBRATE_FLAGS)
    config = shared.gate_config(args, "calibrate", default_rules=(DEFAULT_RULE,))
    compute_threads.configure(args.threads)
    specs = shared.engine_specs(args)
    if len(specs) != 1:
        raise HarnessInputError("calibrate: give exactly one --engine (it is paired with itself)")
    if not (specs[0].in_process or specs[0].simulated):
        raise HarnessInputError(
            f"calibrate: --engine {specs[0].kind}: slowdown needs an in-process or simulated engine"
        )
    choice = shared.executor_choice(args)  # Ray missing or its head unreachable: one line, before any work
    if choice.kind != "local" and args.concurrent:
        raise HarnessInputError("calibrate: --concurrent runs both sides here; with --executor ray each pair is a unit")
    base_seed = args.seed or 0
    workload, overrides = shared.load_run_workload(args, specs, seed=base_seed)
    overrides.pop("seed")
    scenario = shared.scenario_from_args(args, workload)
    out = args.out or shared.default_out("calibrate", workload.name)
    plan = CalibrationPlan(
        pairs=args.pairs,
        slowdown=args.slowdown,
        trials=args.trials,
        seed=base_seed,
        max_false_alarm=args.max_false_alarm,
        min_detection=args.min_detection,
    )

    def load(seed: int) -> Any:
        return load_workload(args.workload, **overrides, seed=seed)

    source = PairSource(args.workload, overrides, scenario, args.model, args.dtype, args.threads)
    with shared.executor_from_args(args) as executor:
        here = executor.kind == "local"
        run_one: Any = None
        if here:
            run_one = ConcurrentReplay(scenario, args.model, args.dtype, args.threads or 1) if args.concurrent else None
            run_one = run_one or InProcessReplay(scenario, args.model, args.dtype)
        _header(args, config, workload, plan, executor)
        try:
            data = calibrate(plan, specs[0], config, load, run_one, out, executor=executor, source=source)
        finally:
            if isinstance(run_one, ConcurrentReplay):
                run_one.close()
    _report(data, plan, config, out)
    return {"met": 0, "missed": 1}.get(data["summary"]["outcome"], 3)


def _header(args: argparse.Namespace, config: Any, workload: Any, plan: Any, executor: Any) -> None:
    from harness.judge.trials import use_trials

    print(
        f"calibrating {', '.join(r.text for r in config.rules)} (alpha {config.alpha}) on {workload.name}, "
        f"{len(workload.requests)} requests per run, {plan.pairs} pairs of each kind, {plan.trials} trial(s) each, "
        f"slowdown {plan.slowdown:.0%}"
    )
    trials = list(range(plan.trials))
    if use_trials(config.unit, trials, trials, config.min_trials):
        print("the gate judges trials")
    elif config.unit == "auto":  # the gate's few-trials rule (harness.gate.judge): no run-to-run noise to judge on
        print(
            f"the gate cannot tell a change rule: {plan.trials} trial(s) per side show no run-to-run noise "
            f"(give --trials {config.min_trials} or more, or --unit request)"
        )
    else:
        print("the gate judges requests")
    mode = "concurrently, one worker process per side" if args.concurrent else "one after the other"
    print(f"the two sides of each pair run {mode}")
    if executor.kind != "local":
        print(f"pairs run as units on Ray ({executor.slots} CPUs), each pair's trials on one node")


def _report(data: dict[str, Any], plan: Any, config: Any, out: Path) -> None:
    s = data["summary"]
    labels = {"false_alarm": "A/A false-alarm rate", "detection": f"{plan.slowdown:.0%} slowdown detected"}
    for name, label in labels.items():
        part = s[name]
        print(
            f"{label}: {part['failed']}/{part['pairs']} = {part['rate']:.0%} "
            f"(95% CI {part['ci95'][0]:.0%}-{part['ci95'][1]:.0%})"
        )
    for n in data["noise"]:
        spread = (lambda v: f"{v:.1%}") if n["scale"] == "log ratio" else (lambda v: f"{v:.4g}")
        sd, need = spread(n["trial_sd"]), n["trials_for_95pct_detection"] or n["plan_note"]
        if n["trial_sd_bound"] is not None:
            need = (
                f"{need} (planned on the pilot's bounds, sd {spread(n['trial_sd_bound'])} and slowdown "
                f"{_signed(n['slowdown_change_bound'])}, to hold in {n['plan_assurance']:.0%} of pilots)"
            )
        if n["trials_naive"] is not None:
            need = f"{need}; {n['trials_naive']} taking the pilot's estimates as exact"
        aa, slow = _signed(n["aa_mean_change"]), _signed(n["slowdown_mean_change"])
        print(
            f"noise of {n['rule']}: one trial's change has sd {sd} ({n['scale']}, median over A/A pairs); "
            f"A/A changes averaged {aa}, the slowdown's {slow}; trials per side to catch it in 95% of gates "
            f"at alpha {config.alpha}: {need}"
        )
    print(
        f"targets (false alarms <= {plan.max_false_alarm:.0%}, detection >= {plan.min_detection:.0%}): "
        f"{_OUTCOME_TEXT[s['outcome']]}; calibration directory: {out.resolve()}"
    )


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"
