"""A benchmark run: one workload, one or more engines replaying the identical schedule, N trials.

Everything lands in the run directory (docs/run-directory.md) as it happens; metrics, the Markdown
summary and the HTML report are computed from those files at the end, so they can be recomputed
from a run that died half way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.options import OPTIONS
from harness.collector import full_collection, survivors_frozen
from harness.engine_specs import EngineSpec, build_engine
from harness.jsonl import JsonlWriter
from harness.jsonl_batch import BatchedJsonlWriter
from harness.loadgen import Scenario, Scheduled, StopRules, dispatcher_first, replay_engine
from harness.loadgen.classes import apply_classes, check_request_classes, class_header_notes, run_classes
from harness.loadgen.replay import shares_prefixes
from harness.machine import measured
from harness.manifest import build_manifest
from harness.metrics import SLO, load_records, load_steps, summarize
from harness.metrics.prefix_cache import predicted_hit_rate
from harness.metrics.server_series import read_series
from harness.metrics.slo_classes import SLOClass
from harness.metrics.stats import DEFAULT_N_BOOT
from harness.metrics.workers import worker_table
from harness.progress import Mode, ProgressPrinter
from harness.prompts import RunPrompts, build_prompts, prompt_kind
from harness.server_scrape import start_scrape
from harness.shards import SHARDABLE, ShardedLoad
from harness.side_by_side import replay_side_by_side, side_by_side

if TYPE_CHECKING:
    import pandas as pd

    from engines.model.loader import LoadedModel, LoadedTokenizer


@dataclass
class RunSettings:
    """How a benchmark run replays its workload: where it writes, the scenario, trials, SLO and stop rules."""

    out_dir: Path
    scenario: Scenario = field(default_factory=Scenario)
    repeat: int = 1
    seed: int = 0
    slo: SLO = field(default_factory=SLO)
    price_per_hour: float = 2.0
    stop_rules: StopRules = field(default_factory=StopRules)
    model_path: str | None = None
    dtype: str = "float32"
    tokenizer_path: str | None = None  # None: the model's (--model), else the embedded model's
    progress: Mode | None = None  # "bar" (a terminal), "lines" (a log) or None (quiet)
    report: bool = True
    n_boot: int = DEFAULT_N_BOOT  # bootstrap resamples behind every confidence interval
    warn_live: bool = True  # print a line when an early warning of the step trace first fires
    workers: int = 1  # load-generator workers per http or zero engine run (sharded load generation)
    threads: int | None = None  # torch threads of an in-process engine: what a trial unit asks a cluster for
    slo_classes: tuple[SLOClass, ...] = ()  # --slo-class: per-class targets (harness/loadgen/classes.py)


def _watched(write_step: Any, label: str, trial: int) -> Any:
    """`write_step`, also feeding the step-trace early warnings, which say so the first time each fires."""
    import sys

    from harness.metrics.warnings import WarningMonitor

    def say(name: str, t: float, value: float) -> None:
        threshold = monitor.settings.thresholds[name]
        sys.stderr.write(f"\n[{label} t{trial}] early warning: {name} {value:.3g} > {threshold:g} at t={t:.1f} s\n")

    monitor = WarningMonitor(on_fire=say)

    def write(step: Any) -> None:
        write_step(step)
        monitor.observe(step)

    return write


async def one_engine_run(
    spec: EngineSpec,
    loaded: Any,
    schedule: list[Scheduled],
    records: JsonlWriter,
    steps_path: Path | None,
    settings: RunSettings,
    trial: int,
) -> tuple[Any, dict[str, Any]]:
    if spec.simulated and spec.options.get("seed") is None:
        # each simulated engine and trial draws its own noise, fixed by the run's seed (an A/A pair differs)
        seed = (settings.seed * 1000 + trial) * 4096 + zlib.crc32(spec.label.encode()) % 4096
        spec = EngineSpec(spec.kind, spec.label, {**spec.options, "seed": seed})
    engine = build_engine(spec, loaded)
    steps: Any = None
    write_step: Any = None
    if steps_path is not None and spec.simulated:  # a simulated hour is half a million steps: Arrow batches
        steps = BatchedJsonlWriter(steps_path)
        write_step = steps.write
    elif steps_path is not None:
        steps = JsonlWriter(steps_path)
        write_step = lambda step: steps.write(step.to_json())  # noqa: E731
    if settings.warn_live and write_step is not None and not spec.simulated:  # virtual time: over in a blink
        write_step = _watched(write_step, spec.label, trial)
    progress = ProgressPrinter(f"{spec.label} t{trial}", settings.progress) if settings.progress else None
    scrape = await start_scrape(spec, settings.out_dir, trial)
    try:
        outcome = await replay_engine(
            engine,
            schedule,
            settings.scenario,
            (lambda record: records.write_fast(record.to_json()))
            if spec.simulated
            else (lambda record: records.write(record.to_json())),
            label=spec.label,
            trial=trial,
            steps=write_step,
            stop_rules=settings.stop_rules,
            progress=progress,
            on_origin=scrape.set_origin if scrape is not None else None,
        )
    finally:
        if scrape is not None:
            await scrape.finish()
        if steps is not None:
            steps.close()
        if progress is not None:
            progress.close()
    described = engine.describe()
    if spec.kind == "http":  # the scrape is part of how the target was measured: recorded beside the engine
        described["scrape"] = None if scrape is None else scrape.describe()
    return outcome, described


def load_model_for(specs: list[EngineSpec], settings: RunSettings) -> LoadedModel | None:
    """The model the in-process engines among `specs` run on (None when there is none)."""
    if not any(spec.in_process for spec in specs):
        return None
    from engines import compute_threads
    from engines.engine_process import fork_worker
    from engines.model.loader import load_model
    from engines.options import in_process_options

    compute_threads.configure()  # this thread runs the event loop; the engines' threads compute
    loaded = load_model(settings.model_path, dtype=settings.dtype)
    if any(spec.in_process and in_process_options(spec.kind, spec.options).engine_process for spec in specs):
        # the first engine's worker process: a copy of this one with the model in it, as `batchmark serve`
        # starts its own, instead of a new process that imports torch and loads the model again
        fork_worker(loaded)
    return loaded


_MODELS: dict[tuple[str | None, str], Any] = {}  # a Ray worker process loads each model once for all its units


def run_tokenizer(settings: RunSettings, loaded: Any) -> LoadedTokenizer:
    """`--tokenizer`, else the model's tokenizer (already loaded with the model when engines run in process)."""
    from engines.model.loader import LoadedTokenizer, load_tokenizer

    if settings.tokenizer_path is None and loaded is not None:
        return LoadedTokenizer(loaded.tokenizer, loaded.source, loaded.tokenizer_hash)
    return load_tokenizer(settings.tokenizer_path or settings.model_path)


def spec_prompt_kind(spec: EngineSpec, specs: list[EngineSpec]) -> str:
    if spec.simulated:
        return "lengths"
    return prompt_kind(spec.kind, spec.options, any(s.kind == "http" for s in specs))


def unit_cpus(specs: list[EngineSpec], settings: RunSettings) -> float:
    """What one trial of `specs` uses: an in-process engine its torch threads (`--threads`, default 1 on a
    cluster), a simulated or HTTP engine one CPU."""
    return float(settings.threads or 1) if any(spec.in_process for spec in specs) else 1.0


@survivors_frozen()  # its full collections (one before and one after each timed replay) scan only what is new
def run_benchmark(
    workload: Any,
    specs: list[EngineSpec],
    settings: RunSettings,
    argv: list[str],
    loaded: Any = None,
    executor: Any = None,
) -> dict[str, Any]:
    """Replay `workload` against every engine, `settings.repeat` times; returns metrics.json's content.
    `loaded`: the model, when the caller already has it (a sweep loads it once for all its runs).
    `executor`: where the trials run (`harness.executor`; None: here, one after the other)."""
    classes, class_notes = run_classes(workload, settings.slo_classes)  # a spec's classes, then the CLI's
    settings = dataclasses.replace(settings, slo_classes=classes)
    class_notes += check_request_classes(workload, settings.slo_classes)  # before any work
    class_notes += class_header_notes(specs, settings.slo_classes)
    class_notes += settings.stop_rules.notes(settings.scenario.kind)
    out = settings.out_dir
    out.mkdir(parents=True, exist_ok=True)
    remote = executor is not None and executor.kind != "local" and not _sharded(specs, settings)
    if loaded is None and not remote:
        loaded = load_model_for(specs, settings)
    # built here even when the trials run elsewhere: the units replay exactly these prompts
    prompts = _prompts(workload, specs, loaded, settings)
    for note in [*class_notes, *prompts.notes()]:
        print(f"  note: {note}")
    with JsonlWriter(out / "requests.jsonl") as writer:
        for r in workload.requests:
            writer.write(
                {
                    "request_id": r.request_id,
                    "arrival_s": r.arrival_s,
                    "input_tokens": r.input_tokens,
                    "output_tokens": r.output_tokens,
                    "tenant": r.tenant,
                    "priority": r.priority,
                    **({"reasoning_tokens": r.reasoning_tokens} if r.reasoning_tokens else {}),
                    **({"slo_class": r.slo_class} if r.slo_class is not None else {}),
                    **({"session": r.session, "turn": r.turn, "think_s": r.think_s} if r.session is not None else {}),
                    **({"tool_s": r.tool_s} if r.tool_s else {}),
                    **({"branch": r.branch} if r.branch else {}),
                    **({"fresh": True} if r.fresh else {}),
                }
            )
    run_settings = {
        "repeat": settings.repeat,
        "slo": settings.slo.to_json(),
        "slo_classes": {c.name: c.slo.to_json() for c in settings.slo_classes},
        "slo_class_sources": {c.name: c.source for c in settings.slo_classes},  # spec FILE:LINE or --slo-class
        "price_per_hour": settings.price_per_hour,
        "stop_rules": dataclasses.asdict(settings.stop_rules),
        "open_loop": settings.scenario.kind != "closed",
        "scenario": settings.scenario.__dict__,
        "workers": settings.workers,
    }
    model = loaded.describe() if loaded else None
    manifest = build_manifest(
        argv=argv, workload=workload, engines=[], model=model, seed=settings.seed, settings=run_settings
    )
    manifest["executor"] = executor.describe() if executor is not None else {"kind": "local"}
    manifest["prompts"] = prompts.describe()  # the tokenizer (its hash) the prompt lengths are exact in
    _write_json(out / "manifest.json", manifest)
    outcomes: list[dict[str, Any]] = []
    summaries: dict[tuple[str, int], dict[str, Any]] = {}  # engine runs already summarised where they ran
    with dispatcher_first():
        if remote:
            _replay_on(executor, prompts, specs, settings, manifest, outcomes)
        else:
            kind = executor.kind if executor is not None else "local"
            shards = ShardedLoad(kind, settings.workers) if _sharded(specs, settings) else None
            try:
                with JsonlWriter(out / "records.jsonl") as records:
                    for trial in range(settings.repeat):
                        done = _replay_trial(specs, loaded, prompts, settings, trial, records, shards, summaries)
                        for outcome, described in done:
                            _note(manifest, outcomes, outcome, described, out)
            finally:
                if shards is not None:
                    shards.close()
    manifest["finished_at_unix"] = time.time()
    manifest["outcomes"] = outcomes
    _write_json(out / "manifest.json", manifest)
    metrics = compute_metrics(out, settings, outcomes, summaries)
    metrics["prefix_cache_predicted"] = predicted_prefix_reuse(workload, specs, prompts)
    _write_json(out / "metrics.json", metrics)
    return metrics


def _sharded(specs: list[EngineSpec], settings: RunSettings) -> bool:
    return settings.workers > 1 and any(spec.kind in SHARDABLE for spec in specs)


def _prompts(workload: Any, specs: list[EngineSpec], loaded: Any, settings: RunSettings) -> RunPrompts:
    """The schedule in each prompt kind the engines take (ids, text, chat; lengths for simulated engines)."""
    kinds = {spec_prompt_kind(spec, specs) for spec in specs}
    # only simulated engines: no engine reads a token, so no tokenizer is needed (a whole trace of lengths)
    tokenizer = run_tokenizer(settings, loaded) if kinds != {"lengths"} else None
    prompts = build_prompts(
        workload,
        kinds,
        tokenizer.tokenizer if tokenizer else None,
        tokenizer.describe() if tokenizer else None,
        settings.seed,
    )
    if settings.slo_classes or any(r.slo_class is not None for r in workload.requests):
        prompts.schedules = {k: apply_classes(v, settings.slo_classes) for k, v in prompts.schedules.items()}
    return prompts


def _note(
    manifest: dict[str, Any],
    outcomes: list[dict[str, Any]],
    outcome: dict[str, Any],
    described: dict[str, Any],
    out: Path,
) -> None:
    if outcome["trial"] == 0:
        manifest["engines"].append(described)
        _write_json(out / "manifest.json", manifest)
    outcomes.append(outcome)


def _replay_trial(
    specs: list[EngineSpec],
    loaded: Any,
    prompts: RunPrompts,
    settings: RunSettings,
    trial: int,
    records: JsonlWriter,
    shards: ShardedLoad | None = None,
    summaries: dict[tuple[str, int], dict[str, Any]] | None = None,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """One trial: every engine in turn on the identical schedule (all-simulated engines side by side:
    `harness.side_by_side`); (outcome, engine description) each. Engine runs summarised where they ran
    (side by side, into `summaries` if given) are added to it, keyed by (engine, trial)."""
    out = settings.out_dir
    steps_paths = [out / "steps" / f"{spec.label}-t{trial}.jsonl" if spec.has_step_trace else None for spec in specs]
    schedules = [prompts.schedules[spec_prompt_kind(spec, specs)] for spec in specs]
    side = shards is None and side_by_side(specs, max(len(s) for s in schedules))
    side_runs: list[Any] = []
    if side:
        summarise = engine_run_summary if summaries is not None else None
        side_runs = replay_side_by_side(
            one_engine_run, specs, schedules, settings, trial, records, steps_paths, summarise
        )
    ran = iter(side_runs)
    done = []
    for spec, schedule, steps_path in zip(specs, schedules, steps_paths, strict=True):
        sharding = None
        if side:
            outcome, described, noise, summary = next(ran)
            if summary is not None and summaries is not None:
                summaries[(spec.label, trial)] = summary
        else:
            with measured() as noise:  # what else the machine did meanwhile (harness.machine)
                if shards is not None and spec.kind in SHARDABLE:
                    sharded = shards.replay(
                        spec,
                        schedule,
                        settings.scenario,
                        records.write,
                        label=spec.label,
                        trial=trial,
                        stop_rules=settings.stop_rules,
                    )
                    outcome, described, sharding = sharded.outcome, build_engine(spec, None).describe(), sharded
                else:
                    outcome, described = asyncio.run(
                        one_engine_run(spec, loaded, schedule, records, steps_path, settings, trial)
                    )
        if spec.simulated:  # virtual time: the neighbours' load changes how long it took, not what it measured
            noise = {**noise, "busy": False, "message": None}
        row: dict[str, Any] = {
            "engine": spec.label,
            "trial": trial,
            "wall_time_s": outcome.wall_time_s,
            "stopped_early": outcome.stopped_early,
            "not_sent": outcome.not_sent,
            "machine": noise,
        }
        if outcome.simulation_wall_s is not None:  # wall_time_s is then the virtual time
            row["simulation_wall_s"] = outcome.simulation_wall_s
        if outcome.over_saturation_unjudged is not None:  # silence would read as "not over-saturated"
            row["over_saturation_unjudged"] = outcome.over_saturation_unjudged
        if sharding is not None:
            row["sharding"] = sharding.to_json()
        done.append((row, described))
        if not spec.simulated:  # a virtual-time run cannot be disturbed by a pause; a first full collection: ~0.3 s
            full_collection()
    return done


def replay_trial_unit(
    prompts: RunPrompts, specs: list[EngineSpec], settings: RunSettings, trial: int, *, out_dir: Path
) -> dict[str, Any]:
    """One trial as an executor unit: records.jsonl and steps/ into `out_dir` (a scratch directory on a
    cluster node); the model is loaded once per worker process, on the threads the unit asked for.
    Returns the (outcome, engine description) of each engine and the model's description."""
    key = (settings.model_path, settings.dtype)
    if key not in _MODELS and any(spec.in_process for spec in specs):
        from engines import compute_threads

        compute_threads.configure(int(unit_cpus(specs, settings)))
        _MODELS[key] = load_model_for(specs, settings)
    loaded = _MODELS.get(key)
    here = dataclasses.replace(settings, out_dir=out_dir, progress=None)
    with dispatcher_first(), JsonlWriter(out_dir / "records.jsonl") as records:
        done = _replay_trial(specs, loaded, prompts, here, trial, records)
    return {"runs": done, "model": loaded.describe() if loaded else None}


def run_unit(workload: Any, specs: list[EngineSpec], settings: RunSettings, argv: list[str], *, out_dir: Path) -> None:
    """A whole benchmark run as an executor unit (a sweep point, a study variant): its run directory is
    written into `out_dir`; the model is loaded once per worker process."""
    key = (settings.model_path, settings.dtype)
    if key not in _MODELS and any(spec.in_process for spec in specs):
        from engines import compute_threads

        compute_threads.configure(int(unit_cpus(specs, settings)))
        _MODELS[key] = load_model_for(specs, settings)
    here = dataclasses.replace(settings, out_dir=out_dir, progress=None, report=False)
    run_benchmark(workload, specs, here, argv, loaded=_MODELS.get(key))


def run_units(executor: Any, jobs: list[tuple[Any, Any, Path]], settings: RunSettings, argv: list[str]) -> None:
    """Whole runs side by side on `executor`: (workload, engine specs, run directory) each; a run's engines
    are compared request by request, so each run is one unit (one node, its engines in turn)."""
    from harness.executor import Unit

    units = [
        Unit(
            run_unit,
            (workload, list(specs), settings, argv),
            run_dir,
            unit_cpus(list(specs), settings),
            None,
            str(run_dir),
        )
        for workload, specs, run_dir in jobs
    ]
    for _ in executor.map(units):
        pass


def _replay_on(
    executor: Any,
    prompts: RunPrompts,
    specs: list[EngineSpec],
    settings: RunSettings,
    manifest: dict[str, Any],
    outcomes: list[dict[str, Any]],
) -> None:
    """Every trial a unit; all of a run's trials on one node (they are compared with each other), each trial's
    engines in turn on it. Each trial's files are merged into the run directory as it comes back."""
    from harness.executor import Unit
    from harness.executor.node import node_name

    out = settings.out_dir
    cpus = unit_cpus(specs, settings)
    units = [
        Unit(replay_trial_unit, (prompts, specs, settings, t), out / f".trial-{t}", cpus, str(out), f"t{t}")
        for t in range(settings.repeat)
    ]
    got: dict[int, Any] = {}
    manifest["nodes"] = {}
    with JsonlWriter(out / "records.jsonl") as records:
        for result in executor.map(units):
            part = units[result.index].out_dir
            assert part is not None
            if (part / "records.jsonl").exists():
                for line in (part / "records.jsonl").read_text(encoding="utf-8").splitlines():
                    records.write(json.loads(line))
            for step in sorted((part / "steps").glob("*.jsonl")) if (part / "steps").exists() else ():
                (out / "steps").mkdir(exist_ok=True)
                step.replace(out / "steps" / step.name)
            shutil.rmtree(part, ignore_errors=True)
            name = node_name(result.node)
            manifest["nodes"][name] = result.node
            manifest["model"] = manifest["model"] or result.value["model"]
            got[result.index] = [
                ({**o, "node": name, "unit_seconds": result.seconds}, d) for o, d in result.value["runs"]
            ]
    for trial in sorted(got):  # outcomes in trial order, whichever finished first
        for outcome, described in got[trial]:
            _note(manifest, outcomes, outcome, described, out)


def predicted_prefix_reuse(workload: Any, specs: list[EngineSpec], prompts: RunPrompts) -> dict[str, Any] | None:
    """The hit rate an unbounded prefix cache would reach on this schedule, per engine block size (16, vLLM's
    default, for targets whose block size is unknown); None for a workload whose prompts share nothing."""
    if not shares_prefixes(workload):
        return None
    sizes = sorted({int(s.options.get("block_size") or OPTIONS["block_size"].default) for s in specs} | {16})
    # one kind's prompts suffice: a request shares the same leading blocks in every kind
    kind = next(k for k in ("ids", "text", "chat", "lengths") if k in prompts.schedules)
    ids = [item.request.prompt_token_ids for item in prompts.schedules[kind]]
    return {str(size): predicted_hit_rate(ids, size) for size in sizes}


def compute_metrics(
    out: Path,
    settings: RunSettings,
    outcomes: list[dict[str, Any]],
    summaries: dict[tuple[str, int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """metrics.json's content, from the files of the run directory `out`. `summaries`: engine runs already
    summarised by `engine_run_summary` from those same files, keyed by (engine, trial)."""
    from harness.metrics.compare_runs import compare_engines, repeat_summary

    records = load_records(out / "records.jsonl")
    runs = []
    for outcome in outcomes:
        subset = records[(records["engine"] == outcome["engine"]) & (records["trial"] == outcome["trial"])]
        if subset.empty:
            continue
        key = (outcome["engine"], outcome["trial"])
        summary = (summaries or {}).get(key) or engine_run_summary(
            subset, *key, outcome["wall_time_s"], out / "steps", settings
        )
        # the simulator's own wall time and this machine's noise while it ran are not facts about the simulated
        # system (virtual time does not slow down on a busy machine); the manifest keeps both
        simulated = "simulation_wall_s" in outcome
        kept = {k: v for k, v in outcome.items() if not (simulated and k in ("simulation_wall_s", "machine"))}
        errors = subset["error_message"].dropna()
        run = {**kept, "first_error": str(errors.iloc[0]) if len(errors) else None, "summary": summary}
        workers = worker_table(subset)
        if workers:  # sharded load generation: each worker's offered and achieved rate and schedule lag
            run["workers"] = workers
        runs.append(run)
    engines = {run["engine"]: run["summary"] for run in runs if run["trial"] == 0}
    return {
        "schema_version": 1,
        "runs": runs,
        "engines": engines,
        "repeat": repeat_summary(runs),
        "comparison": compare_engines(
            records, list(engines), seed=settings.seed, closed_loop=not settings.scenario.on_schedule
        ),
    }


def engine_run_summary(
    records: pd.DataFrame | Path, engine: str, trial: int, wall_time_s: float, steps_dir: Path, settings: RunSettings
) -> dict[str, Any] | None:
    """`summarize` of one engine run: `records` (a frame of that engine's and trial's records, or the path
    of a file of them alone) and its step trace in `steps_dir`, if it has one; None without records."""
    if isinstance(records, Path):
        records = load_records(records)
    if records.empty:
        return None
    steps_path = steps_dir / f"{engine}-t{trial}.jsonl"
    steps = load_steps(steps_path, id_lists=False) if steps_path.exists() else None  # no metric reads the id lists
    server_path = steps_dir.parent / "server" / f"{engine}-t{trial}.jsonl"
    return summarize(
        records,
        steps,
        slo=settings.slo,
        slo_classes=settings.slo_classes,
        price_per_hour=settings.price_per_hour,
        wall_time_s=wall_time_s,
        seed=settings.seed,
        n_boot=settings.n_boot,
        server_rows=read_series(server_path) if server_path.exists() else None,
    )


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    tmp.replace(path)
