"""`batchmark sim fit` (a step-time profile from a run's trace) and `batchmark sim fidelity` (how far
simulated twins of a run's engines land from what the run measured)."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.serving_path import ServingPath


def register(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser("sim", help="the simulator: fit a step-time profile, measure its fidelity")
    commands = sim.add_subparsers(dest="sim_command", required=True, metavar="SIM_COMMAND")
    fit = commands.add_parser("fit", help="fit a step-time profile on a run's step traces")
    fit.add_argument(
        "run_dirs",
        type=Path,
        nargs="+",
        metavar="RUN_DIR",
        help="run directories with steps/*.jsonl, of one model (their steps are pooled)",
    )
    fit.add_argument("-o", "--out", type=Path, required=True, help="profile JSON to write")
    fit.add_argument(
        "--engine",
        action="append",
        dest="engines",
        default=[],
        help="fit on this engine's traces only (repeatable; default: every traced engine)",
    )
    fit.add_argument(
        "--attention-from",
        type=Path,
        metavar="PROFILE",
        help="take the attention kernels' prices (decode_context, prefill_self_pairs, "
        "prefill_context_pairs) from this profile of the same model (e.g. the continuous "
        "engine's) and fit the rest: a static run's few padded prefills cannot tell them "
        "from its rows; the fit takes that profile's version",
    )
    fit.add_argument(
        "--profile-version",
        type=int,
        choices=(2, 3),
        default=None,
        metavar="2|3",
        help="the profile's form (default 3: decode priced piecewise in context; 2: one line)",
    )
    fit.set_defaults(run=fit_command)
    fid = commands.add_parser("fidelity", help="simulate a run's engines on its schedule; print the error table")
    fid.add_argument("real_run", type=Path, nargs="?", help="a run directory of in-process engines")
    fid.add_argument("--profile", type=Path, help="a profile from `batchmark sim fit` (required with RUN)")
    fid.add_argument(
        "--engine", action="append", dest="engines", default=[], help="only this engine of the run (repeatable)"
    )
    fid.add_argument("--json", type=Path, help="also write the table as JSON here")
    fid.add_argument(
        "--no-noise",
        dest="noise",
        action="store_false",
        help="the profile's mean model only, without its measured noise",
    )
    fid.add_argument(
        "--twin-dir",
        type=Path,
        metavar="DIR",
        help="with RUN: also write every twin's request records (records.jsonl, trial = its seed) "
        "and step trace (steps/sim-ENGINE-tSEED.jsonl) here, laid out as a run's, to compare "
        "with the real run's step by step (a new or empty directory)",
    )
    fid.add_argument(
        "--seeds",
        type=_positive_int,
        default=5,
        help="twins per engine, each drawing the profile's noise with its own seed; the table "
        "compares their median (default 5; 1 with --no-noise, which draws nothing)",
    )
    fid.add_argument(
        "--serving",
        type=Path,
        metavar="FILE",
        help="a router's run: give its cluster twin the serving path and the replicas' contention "
        "measured on ANOTHER run (`batchmark sim serving-path CALIBRATION_RUN -o FILE`)",
    )
    fid.add_argument(
        "--sensitivity",
        type=_fraction,
        metavar="F",
        help="also run the same seeded twins with every step priced x(1-F) and x(1+F) (0 < F <= 0.5) and print "
        "each latency's elasticity to the price (1: in proportion), flagging a metric on a tipping point",
    )
    add_suite_arguments(fid)
    fid.set_defaults(run=fidelity_command)
    add_serving_path_command(commands)
    val = commands.add_parser("validate", help="the roofline's error against public GPU step times, per regime")
    val.add_argument(
        "--cost",
        default="roofline",
        metavar="roofline|CALIBRATION",
        help="the plain roofline's defaults, or a calibration (a name under engines/sim/calibrations/ "
        "or a JSON path; `batchmark sim calibrate` writes one)",
    )
    val.add_argument(
        "--truth",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder of truth CSVs (default: tests/fixtures/gpu_truth, SOURCE.md there)",
    )
    val.add_argument("--json", type=Path, help="also write the table as JSON here")
    val.set_defaults(run=validate_command)
    cal = commands.add_parser("calibrate", help="fit the roofline's terms on one accelerator's public GPU times")
    cal.add_argument(
        "--hardware",
        default="a100",
        help="fit on these accelerators' training-half rows, comma-separated (default a100)",
    )
    cal.add_argument("--truth", type=Path, default=None, metavar="DIR", help="folder of truth CSVs (as validate)")
    cal.add_argument(
        "--form",
        default="base",
        metavar="FORM",
        help="which terms to fit: base (default), base+mixed, attention, attention+activation "
        "(harness/gpu_truth/fit.py; docs/simulator.md, Calibrations)",
    )
    cal.add_argument("-o", "--out", type=Path, required=True, help="calibration JSON to write")
    cal.set_defaults(run=calibrate_command)
    probe = commands.add_parser("probe", help="measure step times on this machine's GPU: truth rows for validate")
    add_probe_arguments(probe)
    probe.set_defaults(run=probe_command)


def add_serving_path_command(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "serving-path",
        help="a router's run over `batchmark serve --step-trace` replicas: step contention and the serving path",
    )
    cmd.add_argument("run_dir", type=Path, metavar="RUN", help="the run, with RUN/replicas/ (docs/cluster.md)")
    cmd.add_argument("--profile", type=Path, required=True, help="the profile whose price the steps are set against")
    cmd.add_argument(
        "-o",
        "--out",
        type=Path,
        help="write the twin's options (path_ms, slowdown) here: a CALIBRATION "
        "run's, for `sim fidelity --serving` on other runs",
    )
    cmd.add_argument(
        "--paired",
        type=Path,
        nargs=2,
        metavar=("SERVED_RUN", "IN_PROCESS_RUN"),
        help="take the path from these two runs of one schedule instead: the median over requests of "
        "TTFT served minus TTFT in process",
    )
    cmd.set_defaults(run=serving_path_command)


def serving_path_command(args: argparse.Namespace) -> int:
    from harness.cli.args import writable_dir
    from harness.errors import HarnessInputError
    from harness.serving_path import evidence_lines, paired_path_s, save_serving, serving_path

    if args.out is not None:
        if args.out.is_dir():
            raise HarnessInputError(f"-o {args.out}: is a directory; name the file")
        writable_dir(args.out.parent, "-o")
    options, evidence = serving_path(args.run_dir, args.profile, args.paired)
    print(f"{args.run_dir} (profile {args.profile}):")
    for line in evidence_lines(evidence):
        print(f"  {line}")
    if args.paired:
        path, pairs = paired_path_s(*args.paired)
        print(
            f"  paired path: {path * 1e3:.2f} ms, median over {pairs} requests of TTFT in {args.paired[0]} "
            f"minus TTFT in {args.paired[1]}"
        )
    if args.out is not None:
        save_serving(options, args.out)
        print(f"the twin's options: {options.describe()} -> {args.out}")
    return 0


def add_suite_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.fidelity_suite.command import add_arguments

    add_arguments(parser)


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.gpu_truth.probe import add_arguments

    add_arguments(parser)


def probe_command(args: argparse.Namespace) -> int:
    from harness.gpu_truth.probe import run

    return run(args)


def fit_command(args: argparse.Namespace) -> int:
    from harness.cli.args import writable_dir
    from harness.errors import HarnessInputError
    from harness.fit_coverage import coverage_lines
    from harness.simulation import fit_run, pooling_note

    if args.out.is_dir():
        raise HarnessInputError(f"-o {args.out}: is a directory; name the profile's JSON file")
    writable_dir(args.out.parent, "-o")  # checked before the fit, which reads every step trace
    fixed = None
    if args.attention_from is not None:
        from engines.sim.fitted import ATTENTION, load_profile

        source = load_profile(args.attention_from)
        if source.unknown_features:
            raise HarnessInputError(
                f"--attention-from {args.attention_from}: a version-1 profile: "
                f"{', '.join(source.unknown_features)}: feature unknown; refit it"
            )
        if args.profile_version not in (None, source.version):
            raise HarnessInputError(
                f"--attention-from {args.attention_from}: a version-{source.version} profile, "
                f"not --profile-version {args.profile_version}"
            )
        args.profile_version = source.version
        fixed = {name: source.coefficients[name] for name in ATTENTION[source.version]}
    profile = fit_run(
        args.run_dirs, args.engines, fixed, str(args.attention_from) if fixed else None, args.profile_version
    )
    profile.save(args.out)
    fit = profile.fit
    coef = ", ".join(_price(k, v) for k, v in profile.coefficients.items() if k in fit["regressors"])
    r2 = "-" if fit["r2"] is None else f"{fit['r2']:.3f}"
    print(
        f"fitted {fit['steps']} steps of {', '.join(profile.engine['fitted_engines'])}: R^2 {r2}, "
        f"rmse {fit['rmse_s'] * 1e3:.2f} ms (mean step {fit['mean_step_s'] * 1e3:.2f} ms)"
    )
    if fixed:
        print(
            f"  attention priced from {args.attention_from}, not fitted: "
            + ", ".join(_price(k, v) for k, v in fixed.items())
        )
    pooled = pooling_note(profile.engine["fitted_engines"])
    if pooled:
        print(f"  {pooled}")
    print(f"  step = {profile.intercept_s * 1e6:.0f} us + {coef}; gap between steps {profile.step_gap_s * 1e6:.0f} us")
    arrivals = profile.fit.get("idle_arrivals", 0)
    if arrivals:
        print(
            f"  dispatch: {profile.dispatch_s * 1e6:.0f} us from an idle engine's arrival to its step "
            f"(median of {arrivals} arrivals)"
        )
    else:  # a closed loop at saturation, or a served engine without admit times: nothing to measure it on
        print("  dispatch: not measured (no request found a continuous engine idle); the simulator adds none")
    for line in coverage_lines(
        args.run_dirs, profile.engine["fitted_engines"], fit["ranges"], profile.engine.get("max_context")
    ):
        print(f"  {line}")
    spans = ", ".join(f"{k} {r['min']:,.0f}-{r['max']:,.0f}" for k, r in fit["ranges"].items() if r["max"])
    print(f"  fitted range: {spans}; steps beyond it are extrapolated (run and sim fidelity count them)")
    if fit.get("form"):
        print(f"  form: {fit['form']}")
    for name in fit["absent"]:
        kin = fit.get("borrowed", {}).get(name)
        price = f"priced as {kin}, {_price(name, profile.coefficients[name])}" if kin else "priced 0"
        print(f"  {name}: always 0 in these traces, {price}")
    padding = fit.get("padding") or {}
    if padding.get("prefill_rows"):
        print(
            f"  padding: {padding['prefill_rows']:.0%} of prefill rows and {padding['prefill_pairs'] or 0:.0%} of "
            "prefill attention pairs were pad rows, priced as computed"
        )
    if fit.get("unknown"):
        print(
            f"  {', '.join(fit['unknown'])}: feature unknown (the traces predate them): fitted in the version-1 "
            "form, every attention pair at one price; record the run again to split it by kernel"
        )
    print(f"profile: {args.out.resolve()}")
    return 0


def fidelity_command(args: argparse.Namespace) -> int:
    from engines.sim.files import read_json_object
    from engines.sim.fitted import load_profile
    from harness.cluster_twin import has_twin
    from harness.errors import HarnessInputError
    from harness.metrics.sensitivity import sensitivity_block, sensitivity_text
    from harness.metrics.simulation import fidelity_rows, manifest_notices
    from harness.simulation import profile_mismatch, run_engines, speed_line, trial_speeds

    if args.suite is not None:
        from harness.cli.args import writable_dir
        from harness.fidelity_suite.command import suite_command

        if args.json and not args.json.is_dir():
            writable_dir(args.json.parent, "--json")  # checked before any run
        if args.twin_dir is not None:
            raise HarnessInputError("sim fidelity: --twin-dir goes with RUN only: give a pair's run and its profile")
        if args.serving is not None:
            raise HarnessInputError("sim fidelity: --serving goes with RUN only (a router's run and its profile)")
        return suite_command(args, simulate_twin)
    if args.real_run is None or args.profile is None:
        raise HarnessInputError("sim fidelity: give RUN and --profile P, or --suite FILE")
    if args.runs or args.measure or args.lock:
        raise HarnessInputError("sim fidelity: --runs, --measure and --lock go with --suite only")
    if args.twin_dir is not None:
        from harness.cli.args import writable_dir

        if args.twin_dir.exists() and (not args.twin_dir.is_dir() or any(args.twin_dir.iterdir())):
            raise HarnessInputError(f"--twin-dir {args.twin_dir}: not a new or empty directory")
        writable_dir(args.twin_dir, "--twin-dir")
    engines = [e for e in run_engines(args.real_run) if has_twin(e)]  # a router's run: its cluster twin
    if args.engines:
        engines = [e for e in engines if e.get("name") in args.engines]
    if not engines:
        raise HarnessInputError(
            f"{args.real_run}: no in-process engine (static or continuous) or router over "
            "replicas (http: router=, replicas=) to simulate"
        )
    # read and checked before any twin runs: a run dir without metrics, or a bad profile, is one line
    metrics = read_json_object(args.real_run / "metrics.json", "run's metrics")
    real, trials = metrics.get("engines"), metrics.get("repeat") or {}
    missing = [e["name"] for e in engines if not isinstance(real, dict) or e["name"] not in real]
    if missing:
        raise HarnessInputError(f"{args.real_run}/metrics.json: field engines: no summary of {missing[0]!r}")
    profile = load_profile(args.profile)
    fitted = profile.engine
    for engine in engines:
        mismatch = profile_mismatch(engine, fitted)
        if mismatch:
            print(f"warning: {engine['name']}: {mismatch}; the twin predicts another engine", file=sys.stderr)
    serving = None
    if args.serving is not None:
        from harness.serving_path import load_serving

        serving = load_serving(args.serving)
        if not any(e.get("kind") == "http" for e in engines):
            raise HarnessInputError(f"--serving {args.serving}: {args.real_run} has no router's run to apply it to")
        if Path(serving.measured_on).resolve() == args.real_run.resolve():
            raise HarnessInputError(
                f"--serving {args.serving}: measured on {args.real_run} itself; calibrate on "
                "another run, or the twin is fitted to the run it is judged on"
            )
        print(f"cluster twin's serving path ({args.serving}): {serving.describe()}")
    seeds = range(args.seeds if args.noise else 1)
    table = []
    twins: list[dict[str, Any]] = []  # each twin's description after its run: where the profile extrapolated

    def run_twins(engine: dict[str, Any], scale: float = 1.0) -> list[dict[str, Any]]:
        """The engine's seeded twins (headline: all the fidelity rows read); at the plain price, each described and
        traced; at another (`--sensitivity`), the same seeds with every step's price times `scale`."""
        plain = scale == 1.0
        return [
            simulate_twin(
                args.real_run,
                engine,
                args.profile,
                noise=args.noise,
                seed=s,
                described=twins if plain else None,
                trace_dir=args.twin_dir if plain else None,
                serving=serving,
                headline=True,
                step_scale=scale,
            )
            for s in seeds
        ]

    for engine in engines:
        simulated = run_twins(engine)
        rows = fidelity_rows(real[engine["name"]], *simulated, trials=trials.get(engine["name"]))
        table.append({"engine": engine["name"], "seeds": len(seeds), "rows": rows})
        if args.sensitivity is not None:
            at = functools.partial(run_twins, engine)
            table[-1]["sensitivity"] = sensitivity_block(args.sensitivity, simulated, at)
    print(format_fidelity(table, args.real_run, args.profile))
    for entry in table:
        if "sensitivity" in entry:
            print(f"SENSITIVITY: {entry['engine']}: {sensitivity_text(entry['sensitivity'])}")
    for engine, entry in zip(engines, table, strict=True):
        if engine.get("kind") in ("static", "continuous"):  # in process: its own step trace
            try:
                speeds = trial_speeds(args.real_run, engine["name"], profile)
            except HarnessInputError as exc:  # a trace it cannot read: the table stands, the speed is unknown
                print(f"SPEED: {engine['name']}: unknown ({exc})")
                continue
            line = speed_line(engine["name"], speeds)
            if line is not None:
                print(line)
            if speeds:
                entry["trial_speeds"] = speeds
    first_seed = {str(d["name"]): d for d in reversed(twins)}  # seeds differ only in noise: one line per engine
    for line in manifest_notices({"engines": list(first_seed.values())}):
        if line.startswith(("RANGE:", "FEATURES:")):
            print(f"warning: {line}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return 0


def validate_command(args: argparse.Namespace) -> int:
    from harness.cli.args import writable_dir
    from harness.errors import HarnessInputError
    from harness.gpu_truth.validate import validation_table

    if args.json and args.json.is_dir():
        raise HarnessInputError(f"--json {args.json}: is a directory; name the table's JSON file")
    if args.json:
        writable_dir(args.json.parent, "--json")  # checked before any row is read
    table = validation_table(args.cost, args.truth)
    print(table.text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(table.to_json(), indent=2) + "\n", encoding="utf-8")
    return 0


def calibrate_command(args: argparse.Namespace) -> int:
    from harness.cli.args import writable_dir
    from harness.errors import HarnessInputError
    from harness.gpu_truth.fit import fit_calibration
    from harness.gpu_truth.rows import DEFAULT_DIR

    if args.out.is_dir():
        raise HarnessInputError(f"-o {args.out}: is a directory; name the calibration's JSON file")
    writable_dir(args.out.parent, "-o")
    hardware = [h.strip().lower() for h in args.hardware.split(",") if h.strip()]
    calibration = fit_calibration(hardware, args.out.stem, args.truth or DEFAULT_DIR, args.form)
    calibration.save(args.out)
    fit = calibration.fitted_on
    print(f"fitted {fit['rows']} training rows on {', '.join(hardware)}: rms log error {fit['rms_log_error']:.3f}")
    print(
        f"calibration: {args.out.resolve()} (check it on the rows it did not see: "
        f"batchmark sim validate --cost {args.out})"
    )
    return 0


def simulate_twin(
    run_dir: Path,
    engine: dict[str, Any],
    profile: Path,
    noise: bool = True,
    seed: int = 0,
    described: list[dict[str, Any]] | None = None,
    trace_dir: Path | None = None,
    serving: ServingPath | None = None,
    headline: bool = False,
    step_scale: float = 1.0,
    step_scale_shapes: str = "all",
) -> dict[str, Any]:
    """The summary of `engine`'s simulated twin on `run_dir`'s schedule, computed as the run computed its own;
    `described` gets the twin's description after its run (what it counted, e.g. steps beyond the fitted range);
    `trace_dir` gets its records and step trace, as a run directory holds a trial's (the trial is the seed);
    `serving` (a router's run): the measured serving path and contention its cluster twin adds; `headline`: only
    what fidelity reads (`harness.metrics.summary.headline_summary`, the same numbers), for a suite's many twins;
    `step_scale`: every step's price times this (a twin at its real trial's measured speed), `step_scale_shapes`
    "measured": only the steps of the shapes the profile's fit runs measured (engines/sim/build.py)."""
    from harness.engine_specs import build_engine, parse_engine_specs
    from harness.loadgen.classes import recorded_classes
    from harness.loadgen.virtual import run_virtual_closed_loop, run_virtual_open_loop
    from harness.metrics import SLO, records_frame, steps_frame, summarize
    from harness.metrics.summary import headline_summary
    from harness.simulation import schedule_from_run, twin_spec_text

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    settings = manifest.get("settings") or {}
    text = twin_spec_text(engine, profile, f"sim-{engine['name']}", noise, seed, serving, step_scale, step_scale_shapes)
    spec = parse_engine_specs([text], {})[0]
    sim = build_engine(spec, None)
    records: list[dict[str, Any]] = []
    steps: list[Any] = []  # StepRecords
    if not headline or trace_dir is not None:  # a headline summary reads no steps (and the twin runs the same)
        sim.set_step_sink(steps.append)
    schedule = schedule_from_run(run_dir)
    workload = manifest.get("workload") or {}
    sink = lambda record: records.append(record.to_json())  # noqa: E731
    if (settings.get("scenario") or {}).get("kind") == "sessions":  # each turn waits for the previous answer
        from harness.loadgen.sessions import run_virtual_session_loop

        outcome = run_virtual_session_loop(sim, schedule, sink, label=spec.label)  # type: ignore[arg-type]
    elif workload.get("closed_loop_users"):
        outcome = run_virtual_closed_loop(
            sim,
            schedule,
            sink,
            label=spec.label,
            users=workload["closed_loop_users"],
            think_time_s=workload.get("think_time_s") or 0.0,
        )  # type: ignore[arg-type]
    else:
        outcome = run_virtual_open_loop(sim, schedule, sink, label=spec.label)  # type: ignore[arg-type]
    if described is not None:
        described.append(sim.describe())
    step_rows = [s.to_json() for s in steps]
    if trace_dir is not None:
        write_twin_trace(trace_dir, spec.label, seed, records, step_rows)
    if headline:
        return headline_summary(records_frame(records), seed=manifest.get("seed", 0))
    slo = SLO(**settings["slo"]) if settings.get("slo") else SLO()
    return summarize(
        records_frame(records),
        steps_frame(step_rows),
        slo=slo,
        slo_classes=recorded_classes(settings),
        price_per_hour=settings.get("price_per_hour", 2.0),
        wall_time_s=outcome.wall_time_s,
        seed=manifest.get("seed", 0),
    )


def write_twin_trace(
    trace_dir: Path, label: str, seed: int, records: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> None:
    """One twin's records (appended to records.jsonl, `trial` its seed) and steps (steps/LABEL-tSEED.jsonl)."""
    (trace_dir / "steps").mkdir(parents=True, exist_ok=True)
    with open(trace_dir / "records.jsonl", "a", encoding="utf-8") as out:
        out.writelines(json.dumps(record | {"trial": seed}) + "\n" for record in records)
    with open(trace_dir / "steps" / f"{label}-t{seed}.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps(step) + "\n" for step in steps)


def format_fidelity(table: list[dict[str, Any]], run_dir: Path, profile: Path) -> str:
    seeds = max((entry.get("seeds", 1) for entry in table), default=1)
    simulated = "simulated" if seeds == 1 else f"median of {seeds}"
    lines = [
        f"fidelity of the simulator (profile {profile}) against {run_dir}:",
        f"{'engine':<14}{'metric':<14}{'real':>12}{'real 95% CI':>24}{simulated:>14}{'error':>9}"
        + ("  seeds' range" if seeds > 1 else ""),
    ]
    for entry in table:
        for row in entry["rows"]:
            unit, ci, spread = row["unit"], row["real_ci"], row["simulated_range"]
            ci_text = "-" if ci is None else f"[{_fmt(ci[0], unit)}, {_fmt(ci[1], unit)}]"
            if row.get("trials_spread") is not None:  # the real value is the trials' median
                ci_text = f"{len(row['real_trials'])} trials, +-{row['trials_spread']:.0%}"
            error = _pct(row["error"]) + ("" if row["within_real_ci"] is not False else " *")
            spread_text = "" if spread is None else f"  {_fmt(spread[0], unit)} .. {_fmt(spread[1], unit)}"
            lines.append(
                f"{entry['engine']:<14}{row['metric']:<14}{_fmt(row['real'], unit):>12}{ci_text:>24}"
                f"{_fmt(row['simulated'], unit):>14}{error:>9}{spread_text}"
            )
    worst = [abs(r["error"]) for e in table for r in e["rows"] if r["error"] is not None]
    if worst:
        lines.append(f"largest error {max(worst):.1%}")
    if any(r["within_real_ci"] is False for e in table for r in e["rows"]):
        lines.append("* outside the real run's own 95% interval for that percentile")
    if any(r.get("trials_spread") is not None for e in table for r in e["rows"]):
        lines.append("real: the median of the run's trials; +-: how far its furthest trial lies from that median")
    loose = [f"{e['engine']} {r['metric']}" for e in table for r in e["rows"] if (r.get("trials_spread") or 0.0) > 0.10]
    if loose:
        lines.append(
            f"the real run itself repeats by more than 10% on: {', '.join(loose)}: "
            "no simulation can be judged within 10% there"
        )
    return "\n".join(lines)


def _price(name: str, seconds: float) -> str:
    """A coefficient in a readable unit: attention pairs and keys cost nanoseconds, rows microseconds."""
    if name.endswith(("_pairs", "_context")):
        return f"{name} {seconds * 1e9:.3g} ns"
    return f"{name} {seconds * 1e6:.3g} us"


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1e3:.1f} ms"
    return f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _fraction(text: str) -> float:
    """--sensitivity: a fraction of the step price in (0, 0.5] (at 0.5 the twins run at half and 1.5 times it)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value <= 0.5:  # nan fails both comparisons
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 0.5], got {text!r}")
    return value
