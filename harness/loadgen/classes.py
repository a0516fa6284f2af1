"""SLO classes on the schedule: which class each request belongs to, and what that tells the engine.

A request's class is, in this order of precedence: the class the request itself names (a trace's `slo_class`
column), the class its spec tenant names (`slo_class = "..."` in a `[[tenants]]` table; both arrive here as
`Request.slo_class`), else the class named as its tenant (tenant mapping: `--slo-class interactive:ttft_ms=1000`
classes the requests of tenant `interactive`). Classes mean something only with targets: without
`--slo-class` no request is classed (the classes a workload names are then left unused, and a note says so),
and a class a request names that no `--slo-class` defines is an error at its source (file, line, field).

A classed request carries its class name (records, and HTTP targets: `--class-header`), its class's rank as its
priority (the first `--slo-class` given is the most urgent, as vLLM's lower-is-sooner priority; unclassed requests
come after every class), and the TTFT SLO-aware admission aims at for it: its class's TTFT target times the
admission headroom (the same share of the SLO the engine-wide default takes, harness/engine_specs.py), except for
the most urgent class, which admission never refuses: deferring it would put it behind the very work it must go
before, and shedding it protects nothing more urgent. Admission then holds back the lower classes only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.engine_specs import ADMISSION_HEADROOM
from harness.errors import HarnessInputError
from harness.loadgen.scenarios import Scheduled
from harness.metrics.slo import SLO, describe_limits
from harness.metrics.slo_classes import SLOClass


def run_classes(workload: Any, cli: Sequence[SLOClass]) -> tuple[tuple[SLOClass, ...], list[str]]:
    """The classes a run uses and notes on them: the spec's `[[slo_classes]]` in its order, a `--slo-class` of
    the same name taking its place with the CLI's targets (said in a note: the CLI overrides the spec, as a
    workload flag does), then the CLI's other classes in their order."""
    given = {c.name: c for c in cli}
    out: list[SLOClass] = []
    notes: list[str] = []
    for targets in getattr(workload, "slo_classes", ()):
        spec = SLOClass.of(targets)
        if spec.name in given:
            cls = given.pop(spec.name)
            out.append(replace(cls, source=f"--slo-class (overrides {spec.source})"))
            notes.append(
                f"--slo-class {cls.name} overrides the spec's targets ({describe_limits(spec.slo.to_json())}, "
                f"{spec.source}) with {describe_limits(cls.slo.to_json())}"
            )
        else:
            out.append(spec)
    return (*out, *given.values()), notes


def check_request_classes(workload: Any, classes: Sequence[SLOClass]) -> list[str]:
    """Before any work: HarnessInputError naming the file, line and field where the workload names a class
    that `classes` lacks; notes (a class named while no `--slo-class` is given is unused) otherwise."""
    named = sorted({r.slo_class for r in workload.requests if r.slo_class is not None})
    if not named:
        return []
    if not classes:
        return [
            f"the workload names SLO classes ({', '.join(named)}) but neither --slo-class nor the spec's "
            "[[slo_classes]] gives their targets: unused"
        ]
    defined = [c.name for c in classes]
    for name in named:
        if name not in defined:
            where = workload.class_sources.get(name, f"workload {workload.name}: slo_class")
            raise HarnessInputError(f"{where}: unknown SLO class {name!r}; the run defines {', '.join(defined)}")
    return []


def class_header_notes(specs: Sequence[Any], classes: Sequence[SLOClass]) -> list[str]:
    """A `class_header` with no `--slo-class` sends nothing (no request is classed): said, not silently ignored."""
    if classes:
        return []
    return [
        f"--engine {spec.label}: class_header {spec.options['class_header']}: no --slo-class is given, so no "
        "request carries a class and the header is never sent"
        for spec in specs
        if spec.options.get("class_header")
    ]


def recorded_classes(settings: Mapping[str, Any]) -> tuple[SLOClass, ...]:
    """The `--slo-class` definitions a run recorded (its manifest's `settings.slo_classes`, in the order given,
    which is their rank), so that a replay of its requests.jsonl classes them as the run did."""
    try:
        return tuple(SLOClass(str(name), SLO(**slo)) for name, slo in (settings.get("slo_classes") or {}).items())
    except (TypeError, AttributeError) as exc:
        raise HarnessInputError(f"manifest settings.slo_classes: not a class table ({exc})") from None


def apply_classes(
    schedule: list[Scheduled], classes: Sequence[SLOClass], headroom: float = ADMISSION_HEADROOM
) -> list[Scheduled]:
    """`schedule` with each request's class, priority and admission target set; without classes, every request
    unclassed (a class the workload named has no targets to serve). A fresh run and a replay of its
    requests.jsonl (harness/simulation.py `schedule_from_run`) both class their schedule here."""
    if not classes:
        return [
            s if s.request.slo_class is None else replace(s, request=replace(s.request, slo_class=None))
            for s in schedule
        ]
    rank = {c.name: i for i, c in enumerate(classes)}
    by_name = {c.name: c for c in classes}
    out = []
    for item in schedule:
        request = item.request
        cls = by_name.get(request.slo_class if request.slo_class is not None else request.tenant)
        if cls is None:
            request = replace(request, priority=len(classes))
        else:
            ttft = cls.slo.ttft_s
            # the most urgent class is never refused (inf): shedding it would protect nothing
            target = math.inf if rank[cls.name] == 0 else None if ttft is None else ttft * headroom
            request = replace(request, slo_class=cls.name, priority=rank[cls.name], admission_slo_s=target)
        out.append(replace(item, request=request))
    return out
