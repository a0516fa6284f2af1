"""From a name, a spec file or a trace file to a `Workload`: resolve, read or generate, transform."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from workloads.bundled import bundled_trace, read_bundled
from workloads.errors import WorkloadError
from workloads.frame import to_requests
from workloads.model import Workload
from workloads.ops import closed_loop_note
from workloads.options import BY_NAME, SOURCE_OVERRIDES, Options, check_option
from workloads.presets import list_presets, preset_path
from workloads.readers import read_trace
from workloads.session_sources import load_turns
from workloads.sessions import SessionSource, is_session_file, scaled, session_requests
from workloads.spec import SyntheticSource, TraceSource, WorkloadSpec, check_session_options, load_spec_file
from workloads.synthetic import generate_closed, generate_open, scale_rates
from workloads.transforms import TIMED_STEPS, Step, apply_step

SOURCE_KEYS = tuple(o.name for o in SOURCE_OVERRIDES)


def load_workload(name_or_path: str, **overrides: Any) -> Workload:
    """A preset name, a `.toml` spec file or a trace file, with options applied on top.

    Overrides: the options of the override table `workloads.options.OVERRIDES` (seed, start_s, duration_s,
    time_scale, rate, rate_cv, first, requests, max_context, jitter, jitter_width_s, closed_loop_users,
    think_time_s; for trace files format, columns and time_unit) and `name`. None means "not given".
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - set(BY_NAME) - {"name"})
    if unknown:
        raise WorkloadError(f"unknown option; expected one of {', '.join([*BY_NAME, 'name'])}", field=unknown[0])
    spec = resolve(name_or_path, {k: given.pop(k) for k in SOURCE_KEYS if k in given})
    name = given.pop("name", spec.name)
    options = spec.options.merged({k: check_option(k, v) for k, v in given.items()})
    return build_workload(
        WorkloadSpec(name, spec.source, options, spec.description, spec.class_sources, spec.slo_classes)
    )


def resolve(name_or_path: str, source_overrides: dict[str, Any]) -> WorkloadSpec:
    preset = preset_path(name_or_path)
    path = Path(name_or_path)
    if preset is not None:
        spec = load_spec_file(preset, display=f"workloads/presets/{preset.name}")
    elif path.suffix.lower() == ".toml":
        spec = load_spec_file(path, display=name_or_path)
    elif path.is_file() and is_session_file(path) and not source_overrides.get("format"):
        return WorkloadSpec(path.stem, SessionSource(file=path))
    elif path.exists() or path.suffix:
        return WorkloadSpec(path.stem, TraceSource(path=path, **source_overrides))
    else:
        raise WorkloadError(
            f"no such preset or file (presets: {', '.join(list_presets())})", file=name_or_path, field="workload"
        )
    if source_overrides:
        key = next(iter(source_overrides))
        raise WorkloadError(
            "only applies to a trace file given directly; set it in the spec's [trace] table", field=key
        )
    return spec


def _trace_frame(source: TraceSource) -> tuple[pd.DataFrame, dict[str, Any], list[str], dict[str, str]]:
    if source.bundled is not None:
        trace = bundled_trace(source.bundled)
        table = read_bundled(trace.name)
        spec = {"kind": "trace", "bundled": trace.name, **table.source_spec()}
        return table.frame, spec, list(table.notes), dict(table.class_sources)
    assert source.path is not None
    table = read_trace(source.path, source.format, source.columns, source.time_unit, display=str(source.path))
    spec = {"kind": "trace", "file": source.path.name, **table.source_spec()}
    return table.frame, spec, list(table.notes), dict(table.class_sources)


def _synthetic_frame(source: SyntheticSource, o: Options) -> tuple[pd.DataFrame, dict[str, Any]]:
    # On a synthetic workload, requests / duration / rate change what is generated (more or fewer requests
    # of the same mix) rather than sampling or windowing it. A flag replaces both count and horizon of the file.
    requests, duration = source.requests, source.duration_s
    if o.requests is not None or o.duration_s is not None:
        requests, duration = o.requests, o.duration_s
    if duration is not None and o.start_s is not None:
        duration += o.start_s
    tenants = scale_rates(source.tenants, o.rate) if o.rate is not None else source.tenants
    if o.closed_loop_users is not None:
        frame = generate_closed(tenants, o.seed, requests)
    else:
        frame = generate_open(tenants, o.seed, requests, duration)
    spec = {
        "kind": "synthetic",
        "requests": requests,
        "duration_s": duration,
        "tenants": [t.to_spec() for t in tenants],
    }
    return frame, spec


def plan_steps(o: Options, synthetic: bool) -> list[Step]:
    """The transform steps the options ask for, in their fixed order."""
    if synthetic and o.rate_cv is not None:
        raise WorkloadError("applies to trace replay; give a tenant a gamma arrival with a cv instead", field="rate_cv")
    if o.rate_cv is not None and o.rate is None:
        raise WorkloadError("only applies together with rate", field="rate_cv")
    if o.think_time_s is not None and o.closed_loop_users is None:
        raise WorkloadError("only applies to a closed loop; give closed_loop_users too", field="think_time_s")
    steps: list[Step] = []
    if o.jitter or o.jitter_width_s is not None:
        steps.append({"op": "spread_ties", "seed": o.seed, "width_s": o.jitter_width_s})
    if o.start_s is not None or (o.duration_s is not None and not synthetic):
        steps.append({"op": "window", "start_s": o.start_s or 0.0, "duration_s": o.duration_s})
    if o.time_scale is not None:
        steps.append({"op": "time_scale", "factor": o.time_scale})
    if o.rate is not None and not synthetic:
        steps.append({"op": "override_rate", "rate": o.rate, "cv": o.rate_cv, "seed": o.seed})
    if o.first is not None:
        steps.append({"op": "first", "requests": o.first})
    if o.requests is not None and not synthetic:
        steps.append({"op": "sample", "requests": o.requests, "seed": o.seed})
    if o.max_context is not None:
        steps.append({"op": "clip", "max_context": o.max_context, "block_tokens": 512})
    return steps


def _session_workload(spec: WorkloadSpec) -> Workload:
    o = spec.options
    check_session_options(o.given())
    turns = load_turns(spec.source, o.seed)  # type: ignore[arg-type]
    if o.time_scale is not None:
        turns = scaled(turns, o.time_scale)
    requests, notes = session_requests(turns, o.max_context)
    sessions = len({r.session for r in requests})
    subs = sum(1 for r in requests if r.branch)
    notes.append(
        f"{sessions} sessions, {len(requests)} turns: each turn is sent when the previous answer finished "
        "plus its think time"
        + (" and tool time" if any(r.tool_s for r in requests) else "")
        + (
            f"; {subs} are sub-agents sent beside their turn's main request, all joined before the next turn"
            if subs
            else ""
        )
    )
    canonical = {
        "name": spec.name,
        "description": spec.description,
        "seed": o.seed,
        "source": spec.source.to_spec(),  # type: ignore[union-attr]
        "transforms": [
            {"op": k, "value": getattr(o, k)} for k in ("time_scale", "max_context") if getattr(o, k) is not None
        ],
        "closed_loop": None,
    }
    return Workload(spec.name, requests, canonical, notes, slo_classes=spec.slo_classes)


def build_workload(spec: WorkloadSpec) -> Workload:
    o = spec.options
    if isinstance(spec.source, SessionSource):
        return _session_workload(spec)
    synthetic = isinstance(spec.source, SyntheticSource)
    closed = o.closed_loop_users is not None
    steps = plan_steps(o, synthetic)  # checks the options before any reading or generating
    if closed and synthetic and o.rate is not None:
        raise WorkloadError("a closed loop has no arrival rate; its users set the load", field="rate")
    timed = [s["op"] for s in steps if s["op"] in TIMED_STEPS]
    if closed and synthetic and timed:
        raise WorkloadError("a synthetic closed loop has no arrival times to transform", field=timed[0])
    notes: list[str] = []
    sources = dict(spec.class_sources)
    if isinstance(spec.source, SyntheticSource):
        frame, source_spec = _synthetic_frame(spec.source, o)
    else:
        frame, source_spec, notes, sources = _trace_frame(spec.source)
    for step in steps:
        frame, step_notes = apply_step(frame, step)
        notes += step_notes
    think = (o.think_time_s or 0.0) if closed else 0.0
    if closed:
        frame = frame.assign(arrival_s=0.0)
        notes.append(closed_loop_note(o.closed_loop_users, think))
    canonical = {
        "name": spec.name,
        "description": spec.description,
        "seed": o.seed,
        "source": source_spec,
        "transforms": steps,
        "closed_loop": {"users": o.closed_loop_users, "think_time_s": think} if closed else None,
    }
    requests = to_requests(frame)
    named = {r.slo_class for r in requests}  # a class whose every request a transform dropped is not named
    sources = {k: v for k, v in sources.items() if k in named}
    return Workload(spec.name, requests, canonical, notes, o.closed_loop_users, think, sources, spec.slo_classes)
