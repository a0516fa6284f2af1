"""The simulator against real runs: fit a step-time profile on a run's trace, replay a run's schedule
through simulated twins of its engines, and measure how far the simulation is from what was measured.

A twin runs the same scheduler with the same options (read from the run's manifest) on the same
schedule (the run's requests.jsonl), with a fitted profile as its cost model. Fidelity is the relative
error of the twin's headline metrics against the real engine's: TTFT p50/p99, TPOT p50/p99, E2E p50
and output throughput (steady window), each from `harness.metrics.summarize`, so the simulated and the
measured numbers are computed by the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.api import Request
from engines.sim.files import read_json_object
from engines.sim.fitted import FittedCost, TraceSteps, fit_steps
from engines.step_features import FEATURE_NAMES, StepFeatures
from harness.errors import HarnessInputError
from harness.loadgen import Scheduled
from harness.loadgen.classes import apply_classes, recorded_classes
from harness.loadgen.replay import distinct_prompt
from harness.metrics.frame import read_jsonl

if TYPE_CHECKING:  # harness.serving_path reads step traces with this module's trace_steps
    from harness.serving_path import ServingPath

# The trace field each step feature is read from (pad and held rows were traced before the features were).
_TRACED_BEFORE = {"padded_rows": "padded_tokens", "held_rows": "idle_slots"}
TRACE_FIELDS = {name: _TRACED_BEFORE.get(name, name) for name in FEATURE_NAMES}
# traced since the attention was split by kernel (issue 30): an older trace fits the version-1 form without them
_SPLIT_SINCE = frozenset(StepFeatures._fields[StepFeatures._fields.index("decode_context") :])


def run_engines(run_dir: Path) -> list[dict[str, Any]]:
    """The engine descriptions in a run's manifest (in-process, served or simulated)."""
    manifest = read_json_object(run_dir / "manifest.json", "run's manifest")
    engines = manifest.get("engines") or []
    if not isinstance(engines, list):
        raise HarnessInputError(f"{run_dir / 'manifest.json'}: field 'engines' is not a list")
    return engines


# ------------------------------------------------------------------------------------------------ fitting


def trace_steps(paths: Sequence[Path], before_s: float | None = None) -> TraceSteps:
    """Every traced step with features (older traces have none and are refused by name; traces written before the
    attention was split by kernel read those counts as 0 and the steps say so: `split` False); `before_s`: only
    the steps that start before that time of their run (a window of it)."""
    features: list[list[int]] = []
    durations: list[float] = []
    gaps: list[float] = []
    split = True
    for path in paths:
        rows, _ = read_jsonl(path)
        if rows and TRACE_FIELDS["prefill_tokens"] not in rows[0]:
            raise HarnessInputError(
                f"{path}: the step trace has no step features (prefill_tokens, decode_seqs, ...): "
                "it predates them; record the run again"
            )
        names = FEATURE_NAMES
        if rows and not rows[0].keys() >= _SPLIT_SINCE:
            split = False
            names = tuple(n for n in FEATURE_NAMES if n not in _SPLIT_SINCE)
        previous: dict[str, Any] | None = None
        for row in rows:
            try:
                if before_s is not None and float(row["t_start"]) >= before_s:
                    break  # a trace's steps start in order
                counts = dict.fromkeys(FEATURE_NAMES, 0) | {name: int(row[TRACE_FIELDS[name]]) for name in names}
                features.append(list(counts.values()))
                durations.append(float(row["t_end"]) - float(row["t_start"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise HarnessInputError(f"{path}: step {row.get('step')}: bad or missing field ({exc})") from None
            if previous is not None and previous["num_running"] - len(previous["finished"]) > 0:
                gaps.append(float(row["t_start"]) - float(previous["t_end"]))  # the engine had work: no idling
            previous = row
    return TraceSteps(
        np.asarray(features, dtype=np.int64).reshape(-1, len(FEATURE_NAMES)),
        np.asarray(durations),
        np.asarray(gaps),
        [str(p) for p in paths],
        split,
    )


def fit_run(
    run_dir: Path | Sequence[Path],
    engines: Sequence[str] = (),
    fixed: Mapping[str, float] | None = None,
    fixed_from: str | None = None,
    version: int | None = None,
) -> FittedCost:
    """A profile fitted on the step traces of one run directory or several (all their engines, or those
    of `engines`). Several runs widen the shapes the fit has seen (narrow and wide batches), so they
    must have measured the same model: their weights and KV layout are checked to agree. `fixed` prices some
    terms beforehand (`fit_steps`); `fixed_from` says where their prices came from; `version` fits an older form."""
    run_dirs = [run_dir] if isinstance(run_dir, Path) else list(run_dir)
    traced = [(d, e) for d in run_dirs for e in _traced_engines(d, engines)]
    first_dir, first = traced[0]
    for d, e in traced[1:]:
        differs = [key for key, value in _model_identity(e).items() if value != _model_identity(first)[key]]
        if differs:
            raise HarnessInputError(
                f"sim fit: {d} engine {e.get('name')!r} measured other {differs[0]} than "
                f"{first_dir} engine {first.get('name')!r}: fit runs of one model"
            )
    paths = sorted(p for d, e in traced for p in (d / "steps").glob(f"{e['name']}-t*.jsonl"))
    profile = fit_steps(trace_steps(paths), fixed, version)
    if fixed:
        profile.fit["fixed_from"] = fixed_from
    waits = [w for d, e in traced for w in idle_arrival_waits(d, str(e["name"]))]
    profile.dispatch_s = float(np.median(waits)) if waits else 0.0
    profile.fit["idle_arrivals"] = len(waits)
    options = first.get("options") or {}
    model = first.get("model") or {}
    config = model.get("config") or {}
    profile.engine = {
        "kv_bytes_per_token": first.get("kv_bytes_per_token"),
        "kv_blocks": first.get("kv_blocks"),
        "block_size": (options.get("kv") or {}).get("block_size"),
        "max_context": config.get("max_position_embeddings"),
        "model": {k: model.get(k) for k in ("source", "weight_hash") if k in model} | {"config": config},
        "fitted_engines": list(dict.fromkeys(e["name"] for _, e in traced)),
    }
    profile.fit["run_dir"] = ", ".join(str(d) for d in run_dirs)
    return profile


def trial_speeds(run_dir: Path, engine: str, profile: FittedCost) -> list[dict[str, Any]] | None:
    """Each traced trial of `engine` in `run_dir` against the profile's fit runs, shape by shape
    (`engines.sim.shape_speed`): its trial, speed (> 0: slower) and the share of its busy time in shapes the fit
    runs had. None: the profile keeps no shape levels (fitted before it did); [] : no step trace."""
    from engines.sim.shape_speed import run_speed

    named = (p.stem.removeprefix(f"{engine}-t") for p in (run_dir / "steps").glob(f"{engine}-t*.jsonl"))
    trials = sorted(int(t) for t in named if t.isdigit())
    levels = profile.fit.get("shape_levels")
    if not trials or levels is None:
        return [] if not trials else None
    out = []
    for trial in trials:
        steps = trace_steps([run_dir / "steps" / f"{engine}-t{trial}.jsonl"])
        if not len(steps.duration_s):
            continue
        speed, covered = run_speed(steps.features, steps.duration_s, profile.price_steps(steps.features), levels)
        out.append({"trial": trial, "speed": speed, "covered": covered})
    return out


def speed_line(engine: str, speeds: list[dict[str, Any]] | None) -> str | None:
    """The one line `sim fidelity` prints on the real trials' speed (None: nothing to say: no step trace)."""
    from engines.sim.shape_speed import MIN_STEPS

    if speeds is None:
        return f"SPEED: {engine}: unknown (the profile keeps no fit-run levels by step shape; fit it again to know)"
    if not speeds:
        return None
    known = [s for s in speeds if s["speed"] is not None]
    if not known:
        return f"SPEED: {engine}: unknown (no step of its trials has a shape the fit runs had {MIN_STEPS}+ steps of)"
    each = ", ".join("-" if s["speed"] is None else f"{s['speed']:+.1%}" for s in speeds)  # -: no known shape
    covered = min(s["covered"] for s in known)
    return (
        f"SPEED: {engine}: the real trials ran the fit runs' step shapes {each} against the fit runs (> 0: slower; "
        f"on at least {covered:.0%} of their busy time): what the profile cannot price, the machine's moment or what "
        "the shapes leave out (warm-up after an idle pause)"
    )


def pooling_note(engines: Sequence[str]) -> str | None:
    """What a profile fitted on several engines' steps says (issue 30: one pooled profile priced a static batch's
    held slots and a continuous engine's decode alike, and both engines' twins paid for it)."""
    if len(engines) < 2:
        return None
    return (
        f"pooled: one profile for {', '.join(engines)}: their steps are priced alike, though a static batch "
        "pays for pad and held rows a continuous engine never has; `--engine NAME` fits one engine's steps"
    )


def idle_arrival_waits(run_dir: Path, engine: str) -> list[float]:
    """For each request that reached `engine` while no step was in flight and no earlier request was waiting:
    seconds from its scheduled arrival to the start of the step that admitted it. That is the engine's dispatch
    latency alone (waking its loop, and with the loop in its own process, the pipe), which the simulator adds to
    such arrivals."""
    if not (run_dir / "records.jsonl").is_file():  # a step trace alone still fits; its dispatch is not measured
        return []
    records, _ = read_jsonl(run_dir / "records.jsonl")
    waits: list[float] = []
    for path in sorted((run_dir / "steps").glob(f"{engine}-t*.jsonl")):
        suffix = path.stem.rsplit("-t", 1)[1]
        if not suffix.isdigit():  # not a trial's trace (steps/<engine>-t<trial>.jsonl)
            continue
        trial = int(suffix)
        steps, _ = read_jsonl(path)
        if any(r.get("scheduler") == "static" for r in steps):
            # its idle arrivals also wait for a batch to form: the scheduler's decision, which the simulated
            # scheduler replays itself (fitted on static runs, the median "dispatch" was the 50 ms timeout)
            continue
        spans = np.array(sorted((float(r["t_start"]), float(r["t_end"])) for r in steps)).reshape(-1, 2)
        timed = [
            (float(r["t_scheduled"]), float(r["t_admitted"]))
            for r in records
            if r.get("engine") == engine
            and r.get("trial", 0) == trial
            # never admitted (shed, failed), or a record without times: it measures nothing
            and isinstance(r.get("t_admitted"), int | float)
            and isinstance(r.get("t_scheduled"), int | float)
        ]
        # in arrival order (simultaneous ones in admission order): an arrival that finds an earlier one still waiting
        # queues behind it (a burst's later requests wait for the first one's prefill), which the simulator replays
        latest = -np.inf  # the latest admission of the arrivals before this one
        for at, admitted in sorted(timed):
            i = int(np.searchsorted(spans[:, 0], at)) - 1
            if (i < 0 or spans[i, 1] <= at) and latest <= at:
                waits.append(max(0.0, admitted - at))
            latest = max(latest, admitted)
    return waits


def _traced_engines(run_dir: Path, engines: Sequence[str]) -> list[dict[str, Any]]:
    """The measured engines of `run_dir` with a step trace (those named in `engines`, when any are)."""
    traced = [e for e in run_engines(run_dir) if (run_dir / "steps" / f"{e.get('name')}-t0.jsonl").exists()]
    if engines:
        unknown = sorted(set(engines) - {e.get("name") for e in traced})
        if unknown:
            known = ", ".join(str(e.get("name")) for e in traced) or "none"
            raise HarnessInputError(f"{run_dir}: no step trace of engine {', '.join(unknown)} (traced: {known})")
        traced = [e for e in traced if e.get("name") in engines]
    simulated = [e["name"] for e in traced if e.get("simulated")]
    if simulated:
        raise HarnessInputError(f"{run_dir}: {', '.join(simulated)} simulated: fit on measured steps only")
    if not traced:
        raise HarnessInputError(f"{run_dir}: no engine with a step trace (steps/<engine>-t<trial>.jsonl)")
    return traced


def _model_identity(engine: dict[str, Any]) -> dict[str, Any]:
    """What two engines' step times must share to be fitted together: the model's weights and KV layout."""
    model = engine.get("model") or {}
    return {
        "weights": model.get("weight_hash") or model.get("source"),
        "kv_bytes_per_token": engine.get("kv_bytes_per_token"),
    }


def profile_mismatch(engine: Mapping[str, Any], fitted: Mapping[str, Any]) -> str | None:
    """How `engine` differs from what a profile was fitted on (`fitted`: its `engine` table), or None: a twin on
    another model, KV layout or block size predicts another engine's times."""
    fitted_model = fitted.get("model") or {}
    theirs = {
        "weights": fitted_model.get("weight_hash") or fitted_model.get("source"),
        "kv_bytes_per_token": fitted.get("kv_bytes_per_token"),
        "block_size": fitted.get("block_size"),
    }
    kv = (engine.get("options") or {}).get("kv") or {}
    ours = _model_identity(dict(engine)) | {"block_size": kv.get("block_size")}
    for key, value in theirs.items():
        if value is not None and ours[key] is not None and value != ours[key]:
            return f"{key} {ours[key]!r}, the profile was fitted on {value!r}"
    return None


# ------------------------------------------------------------------------------------------------ twins


def twin_spec_text(
    engine: Mapping[str, Any],
    profile: Path,
    label: str,
    noise: bool = True,
    seed: int = 0,
    serving: ServingPath | None = None,
    step_scale: float = 1.0,
    step_scale_shapes: str = "all",
) -> str:
    """The `--engine sim:...` spec that runs `engine`'s scheduler, with its options, on `profile` (a router's
    run: its cluster twin, with `serving`'s measured path and contention when given; `step_scale`: every step's
    price times this, a real trial's measured speed; `step_scale_shapes`: "measured" for only the steps of the
    shapes the profile's fit runs measured, engines/sim/build.py)."""
    kind = engine.get("kind")
    if kind == "http":  # a router over replicas (or refused there by name): the cluster twin
        from harness.cluster_twin import cluster_twin_spec, replica_description

        replica = twin_spec_text(
            replica_description(profile),
            profile,
            f"{label}-replica",
            noise,
            seed,
            step_scale=step_scale,
            step_scale_shapes=step_scale_shapes,
        )
        return cluster_twin_spec(engine, label, seed, replica, serving)
    if kind not in ("static", "continuous"):
        raise HarnessInputError(f"engine {engine.get('name')!r} is {kind!r}: only in-process engines have twins")
    o = engine.get("options") or {}
    kv = o.get("kv") or {}
    # an option the manifest lacks is left out, so the option table's default applies (stated there only)
    items = {
        "scheduler": kind,
        "profile": str(profile),
        "label": label,
        "policy": o.get("policy"),
        "block_size": kv.get("block_size"),
        "noise": str(noise).lower(),
        "seed": seed,
        "twin": engine.get("name"),
    }
    if engine.get("kv_blocks"):
        items["kv_blocks"] = engine["kv_blocks"]
    if step_scale != 1.0:
        items["step_scale"] = step_scale
    if step_scale_shapes != "all":  # left out at its default, so every spec written before it is the same text
        items["step_scale_shapes"] = step_scale_shapes
    if kind == "static":
        static = o.get("static") or {}
        # manifests written before the field took the option's name spell it max_batch_size
        size, timeout = static.get("max_batch", static.get("max_batch_size")), static.get("batch_timeout_s")
        items |= {"max_batch": size, "batch_timeout_ms": None if timeout is None else timeout * 1e3}
    else:
        cont = o.get("continuous") or {}
        items |= {k: cont.get(k) for k in ("max_running", "max_batched_tokens", "chunked_prefill")}
    return "sim:" + ",".join(f"{k}={v}" for k, v in items.items() if v is not None)


def _stand_in(first_row: dict[str, int], row: dict[str, Any], i: int) -> int:
    """The row whose stand-in prompt this one extends: its session's first, or the session's last turn whose
    context started over (`fresh`), which the turns after it extend."""
    if not row.get("session"):
        return i
    if row.get("fresh"):
        first_row[row["session"]] = i
    return first_row.setdefault(row["session"], i)


def schedule_from_run(run_dir: Path) -> list[Scheduled]:
    """The replayed schedule of a run (requests.jsonl), as the engines saw it: EOS ignored. The turns of a session
    keep their session, turn and think time, and share one stand-in prompt's ids (each turn's prompt starts with
    the previous turn's, as a conversation's history does), so the twin's prefix cache finds what the real one did.
    Requests are classed by the run's own `--slo-class` definitions (its manifest), as the run classed them:
    requests.jsonl keeps each request's class and its workload priority, not the class's rank."""
    rows, _ = read_jsonl(run_dir / "requests.jsonl")
    manifest = run_dir / "manifest.json"  # a schedule alone (no manifest) replays unclassed
    classes = (
        recorded_classes(read_json_object(manifest, "run's manifest").get("settings") or {})
        if manifest.is_file()
        else ()
    )
    first_row: dict[str, int] = {}  # a session's stand-in: the ids of its first turn's row, grown turn by turn
    try:
        schedule = [
            Scheduled(
                Request(
                    str(r["request_id"]),
                    distinct_prompt(_stand_in(first_row, r, i), int(r["input_tokens"])),
                    int(r["output_tokens"]),
                    ignore_eos=True,
                    tenant=str(r.get("tenant", "default")),
                    priority=int(r.get("priority", 0)),
                    arrival_time=float(r["arrival_s"]),
                    reasoning_tokens=int(r.get("reasoning_tokens", 0)),
                    slo_class=r.get("slo_class"),
                ),
                float(r["arrival_s"]),
                r.get("session"),
                int(r.get("turn", 0)),
                float(r.get("think_s", 0.0)) + float(r.get("tool_s", 0.0)),
                int(r.get("branch", 0)),
            )
            for i, r in enumerate(rows)
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessInputError(f"{run_dir / 'requests.jsonl'}: bad or missing field ({exc})") from None
    return apply_classes(schedule, classes)
