"""SLO classes on the schedule: which class each request belongs to, and what that tells the engine.

A request belongs to the class named as its tenant (tenant mapping: `--slo-class interactive:ttft_ms=1000`
classes the requests of tenant `interactive`). A classed request carries its class name (records, and HTTP
targets: `--class-header`), its class's rank as its priority (the first `--slo-class` given is the most
urgent, as vLLM's lower-is-sooner priority; unclassed requests come after every class), and the TTFT
SLO-aware admission aims at for it: its class's TTFT target times the admission headroom (the same share
of the SLO the engine-wide default takes, harness/engine_specs.py), except for the most urgent class, which
admission never refuses: deferring it would put it behind the very work it must go before, and shedding
it protects nothing more urgent. Admission then holds back the lower classes only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from harness.loadgen.scenarios import Scheduled
from harness.metrics.slo_classes import SLOClass


def apply_classes(schedule: list[Scheduled], classes: Sequence[SLOClass], headroom: float) -> list[Scheduled]:
    """`schedule` with each request's class, priority and admission target set (unchanged without classes)."""
    if not classes:
        return schedule
    rank = {c.name: i for i, c in enumerate(classes)}
    by_name = {c.name: c for c in classes}
    out = []
    for item in schedule:
        request = item.request
        cls = by_name.get(request.tenant)
        if cls is None:
            request = replace(request, priority=len(classes))
        else:
            ttft = cls.slo.ttft_s
            # the most urgent class is never refused (inf): shedding it would protect nothing
            target = math.inf if rank[cls.name] == 0 else None if ttft is None else ttft * headroom
            request = replace(request, slo_class=cls.name, priority=rank[cls.name], admission_slo_s=target)
        out.append(replace(item, request=request))
    return out
