"""Run a study: every (arm x slice x trial) is one unit, a plain function call on picklable values.

`plan_units` lists the units; `run_unit` runs one (a one-engine `batchmark run` into its own directory,
then the study's metrics, per-tenant figures, early warnings and the recovery actions the step trace
shows); `execute` maps `run_unit` over the units. That map is the one place where the units run, so an
executor that runs them elsewhere (a process pool, a Ray cluster) replaces `map_fn` and nothing else.
Within one slice and trial every arm replays the identical schedule.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.metrics import SLO
from harness.study.guards import treatment_digest
from harness.study.metrics import Metric, metric_values
from harness.study.plan import Slice, StudyPlan
from harness.study.variants import Arm

# Always measured, whatever the plan lists: the trade-off picture's axes.
PICTURE = (
    Metric("throughput"),
    Metric("ttft.p99"),
    Metric("tpot.p99"),
    Metric("worst_slowdown"),
    Metric("jain"),
    Metric("vtc_gap"),
    Metric("failed"),
)
STUDY_N_BOOT = 100  # each unit's own metrics.json: the study's intervals come from trials, not from these


@dataclass(frozen=True)
class Unit:
    """One arm on one slice in one trial: everything `run_unit` needs, picklable."""

    arm: Arm
    slice: Slice
    trial: int
    workload: str
    workload_options: dict[str, Any]
    seed: int
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    metrics: tuple[Metric, ...]
    out_dir: str
    model_path: str | None = None
    dtype: str = "float32"
    slo_classes: tuple[str, ...] = ()  # the plan's `--slo-class` values

    @property
    def key(self) -> str:
        return f"{self.arm.name}-{self.slice.name}-t{self.trial}"


def plan_units(plan: StudyPlan, arms: list[Arm], out: Path, model_path: str | None = None) -> list[Unit]:
    """Trial-major, then slice, then arm: an interrupted study has whole comparisons, not whole arms."""
    metrics = tuple(dict.fromkeys([m.metric for m in plan.metrics] + [plan.pick, *PICTURE]))
    ttft = plan.slo_ttft_ms / 1e3 if plan.slo_ttft_ms else SLO().ttft_s
    tpot = plan.slo_tpot_ms / 1e3 if plan.slo_tpot_ms else SLO().tpot_s
    return [
        Unit(
            arm,
            s,
            trial,
            plan.workload,
            plan.workload_options,
            plan.seed + trial,
            ttft,
            tpot,
            metrics,
            str(out / "units" / f"{arm.name}-{s.name}-t{trial}"),
            model_path,
            slo_classes=plan.slo_classes,
        )
        for trial in range(plan.trials)
        for s in plan.slices
        for arm in arms
    ]


def slice_workload(workload: Any, window: Slice, load: float = 1.0, keep: Callable[[str], bool] | None = None) -> Any:
    """The requests arriving in `window`, re-timed to start at 0 and `load` times as fast, of kept tenants."""
    from workloads.model import Workload

    requests = [
        dataclasses.replace(r, arrival_s=(r.arrival_s - window.start_s) / load)
        for r in workload.requests
        if window.start_s <= r.arrival_s < window.end_s and (keep is None or keep(r.tenant))
    ]
    spec = {**workload.spec, "study_slice": [window.start_s, window.end_s], "load": load}
    # the classes travel with the slice: a spec's [[slo_classes]] rank its requests in every unit, as in a run
    return Workload(
        f"{workload.name}[{window.name}]",
        requests,
        spec,
        list(workload.notes),
        class_sources=dict(workload.class_sources),
        slo_classes=workload.slo_classes,
    )


def run_unit(unit: Unit) -> dict[str, Any]:
    """Run one unit into its directory; returns its results (metrics, tenants, warnings, recovery)."""
    from harness.engine_specs import admission_target_ms, parse_engine_specs
    from harness.loadgen import Scenario
    from harness.metrics import load_records, load_steps
    from harness.metrics.slo_classes import parse_slo_class
    from harness.run import RunSettings, run_benchmark
    from harness.study.classes import unit_classes
    from workloads import load_workload

    slo = SLO(ttft_s=unit.slo_ttft_s, tpot_s=unit.slo_tpot_s)
    spec = parse_engine_specs([unit.arm.spec], {"admission_slo_ms": admission_target_ms(slo)})[0]
    whole = load_workload(unit.workload, **{**unit.workload_options, "seed": unit.seed})
    workload = slice_workload(whole, unit.slice, unit.arm.load, unit.arm.keeps)
    out = Path(unit.out_dir)
    result: dict[str, Any] = {
        "arm": unit.arm.name,
        "slice": unit.slice.name,
        "trial": unit.trial,
        "run_dir": str(out),
        "requests": len(workload.requests),
    }
    if not workload.requests:
        return {
            **result,
            "metrics": {m.label: None for m in unit.metrics},
            "tenants": {},
            "warnings": None,
            "recovery": {},
            "treatment": None,
            "classes": {},
        }
    settings = RunSettings(
        out_dir=out,
        scenario=Scenario("open"),
        seed=unit.seed,
        slo=slo,
        report=False,
        model_path=unit.model_path,
        dtype=unit.dtype,
        n_boot=STUDY_N_BOOT,
        warn_live=False,
        slo_classes=tuple(parse_slo_class(text) for text in unit.slo_classes),
    )
    run_benchmark(workload, [spec], settings, ["batchmark", "study", unit.key], loaded=_model_for(spec, unit))
    records = load_records(out / "records.jsonl")
    steps_path = out / "steps" / f"{spec.label}-t0.jsonl"
    steps = load_steps(steps_path) if steps_path.exists() else None
    summary = json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]
    return {
        **result,
        "metrics": metric_values(unit.metrics, records, slo),
        "tenants": tenant_figures(records),
        "warnings": summary.get("warnings"),
        "recovery": recovery_actions(steps),
        "treatment": treatment_digest(records),
        "classes": unit_classes(summary),
    }


_MODELS: dict[tuple[str | None, str], Any] = {}  # one model per process, however many units it runs


def _model_for(spec: Any, unit: Unit) -> Any:
    if not spec.in_process:
        return None
    key = (unit.model_path, unit.dtype)
    if key not in _MODELS:
        from engines import compute_threads
        from engines.model.loader import load_model

        compute_threads.configure()
        _MODELS[key] = load_model(unit.model_path, dtype=unit.dtype)
    return _MODELS[key]


def tenant_figures(records: Any) -> dict[str, dict[str, Any]]:
    """Per tenant: requests, failures, p99 TTFT and p99 slowdown (None: no successful request)."""
    import numpy as np

    from harness.metrics import request_latencies

    lat = request_latencies(records)
    out: dict[str, dict[str, Any]] = {}
    for tenant, group in lat.groupby("tenant", sort=True):
        ttft = group["ttft"].dropna().to_numpy(dtype=np.float64)
        slow = group["slowdown"].dropna().to_numpy(dtype=np.float64)
        out[str(tenant)] = {
            "requests": len(group),
            "failed": int((~group["succeeded"]).sum()),
            "ttft_p99_s": float(np.percentile(ttft, 99)) if ttft.size else None,
            "slowdown_p99": float(np.percentile(slow, 99)) if slow.size else None,
        }
    return out


def recovery_actions(steps: Any) -> dict[str, Any]:
    """What the recovery controls did, from the step trace: counts of shed, deferred and promoted
    requests, and every fallback decision with its time."""
    out: dict[str, Any] = {"shed": 0, "defer": 0, "promote": 0, "fallback": []}
    if steps is None:
        return out
    for t, decisions in zip(steps["t_start"], steps["decisions"], strict=True):
        for d in decisions:
            action = d.get("action")
            if action in ("shed", "defer", "promote"):
                out[action] += 1
            elif action == "fallback":
                out["fallback"].append({"t": float(t), **{k: v for k, v in d.items() if k not in ("stage", "id")}})
    return out


RunOne = Callable[[Unit], dict[str, Any]]
MapFn = Callable[[RunOne, Sequence[Unit]], Iterable[dict[str, Any]]]


def execute(
    units: Sequence[Unit],
    run_one: RunOne = run_unit,
    map_fn: MapFn = map,
    on_result: Callable[[dict[str, Any]], None] = lambda result: None,
) -> list[dict[str, Any]]:
    """Every unit's result, in unit order: `map_fn(run_one, units)` (the executor's one seam)."""
    results = []
    for result in map_fn(run_one, units):
        results.append(result)
        on_result(result)
    return results


def executor_map(executor: Any, cpus: float) -> MapFn:
    """`execute`'s `map_fn` on a `harness.executor` executor (local or Ray): each study unit is one executor
    unit asking for `cpus` (a simulation: 1; an in-process engine: its threads), written into a scratch
    directory on its node whose files come back to the unit's own directory. Results come in unit order."""
    from harness.executor import Unit as ExecutorUnit
    from harness.executor.node import node_name

    def map_fn(run_one: RunOne, units: Sequence[Unit]) -> Iterable[dict[str, Any]]:
        jobs = [
            ExecutorUnit(_run_into, (run_one, unit), Path(unit.out_dir), cpus, None, Path(unit.out_dir).name)
            for unit in units
        ]
        waiting: dict[int, dict[str, Any]] = {}
        nxt = 0
        for result in executor.map(jobs):  # a cluster finishes units in any order; the study reads them in order
            waiting[result.index] = {**result.value, "node": node_name(result.node)}
            while nxt in waiting:
                yield waiting.pop(nxt)
                nxt += 1

    return map_fn


def _run_into(run_one: RunOne, unit: Unit, *, out_dir: Path) -> dict[str, Any]:
    result = run_one(dataclasses.replace(unit, out_dir=str(out_dir)))
    return {**result, "run_dir": unit.out_dir}  # where the files end up, not the node's scratch directory


def save_json(path: Path, data: dict[str, Any]) -> None:
    from harness.metrics import jsonable

    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n")
    tmp.replace(path)
