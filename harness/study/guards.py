"""What a study's numbers cannot say, flagged beside its verdict (console and study.html).

- **A variant that changes nothing.** Known before the run for the queue orders: `fair` on one tenant and
  `priority` with every priority equal serve in arrival order, as fcfs does; a tenant filter that keeps
  every tenant keeps every request. Seen after the run for anything else (a knob the engine ignores): every
  request's admission, first token and finish identical to its base arm's in every slice and trial.
- **An SLO never at risk.** No arm's p99 TTFT or p99 TPOT reached `SLO_REGION` of the SLO's limit in any
  unit: the arms were compared at a load the engine does not feel, where queue order, admission and
  fallback have nothing to act on, so "no difference" says nothing about the load the SLO is for.

Each flag is a sentence; the verdict keeps them under `flags`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from engines.options import OPTIONS
from harness.study.plan import StudyPlan
from harness.study.variants import Arm, split_spec

# A unit is in the SLO's region once a p99 reaches half the limit: below that even a doubling of the tail
# (what a worse queue order does near saturation) would still meet the SLO.
SLO_REGION = 0.5


def treatment_digest(records: Any) -> str | None:
    """A fingerprint of how every request was treated (admitted, first token, finish, relative to its
    scheduled arrival, and its outcome): two runs with the same digest served every request identically."""
    if records is None or len(records) == 0:
        return None
    times = records[["t_admitted", "t_first_token", "t_finish"]].sub(records["t_scheduled"], axis=0).round(9)
    outcome = records[[c for c in ("request_id", "output_tokens", "error_type") if c in records]]
    table = outcome.join(times).sort_values("request_id")
    return hashlib.sha256(table.to_csv(index=False).encode()).hexdigest()


def _policy(arm: Arm, tenants: set[str], priorities: set[int]) -> str:
    """The queue order `arm` serves this workload in: fair on one tenant and priority on one priority are fcfs."""
    policy = split_spec(arm.spec)[1].get("policy", str(OPTIONS["policy"].default))
    kept = {t for t in tenants if arm.keeps(t)}
    if (policy == "fair" and len(kept) < 2) or (policy == "priority" and len(priorities) < 2):
        return "fcfs"
    return policy


def _priorities(workload: Any, classes: Sequence[Any]) -> set[int]:
    """The priorities the units serve: with SLO classes each request's class rank (unclassed last), as
    harness/loadgen/classes.py `apply_classes` sets them; without, the workload's own."""
    if not classes:
        return {r.priority for r in workload.requests}
    rank = {c.name: i for i, c in enumerate(classes)}
    return {rank.get(r.slo_class if r.slo_class is not None else r.tenant, len(classes)) for r in workload.requests}


def _known_noop(plan: StudyPlan, arms: dict[str, Arm], workload: Any, classes: Sequence[Any]) -> dict[str, str]:
    """variant -> why it changes no request's treatment, decided from the plan, the workload and its classes."""
    tenants = {r.tenant for r in workload.requests}
    priorities = _priorities(workload, classes)
    out = {}
    for v in plan.variants:
        arm, base = arms[v.name], arms[v.base or "baseline"]
        ((key, value),) = v.change.items()
        if key == "policy" and _policy(arm, tenants, priorities) == _policy(base, tenants, priorities):
            kept = sum(arm.keeps(t) for t in tenants)
            what = {"fair": f"{kept} tenant", "priority": f"every priority {next(iter(priorities), 0)}"}
            order = f"({what[value]}) in arrival order" if value in what else "in the same order"
            out[v.name] = f"policy={value} serves this workload {order}, as its base does"
        elif key == "tenants" and all(arm.keeps(t) for t in tenants if base.keeps(t)):
            out[v.name] = f"tenants={value} keeps every tenant of the workload"
    return out


def _seen_noop(plan: StudyPlan, results: Sequence[dict[str, Any]]) -> list[str]:
    """Variants whose every unit treated every request as its base arm's unit on the same slice and trial."""
    digest = {(r["arm"], r["slice"], r["trial"]): r.get("treatment") for r in results}
    out = []
    for v in plan.variants:
        mine = [(k, d) for k, d in digest.items() if k[0] == v.name]
        if mine and all(d is not None and digest.get((v.base or "baseline", *k[1:])) == d for k, d in mine):
            out.append(v.name)
    return out


def _slo_region(plan: StudyPlan, results: Sequence[dict[str, Any]], slo_ttft_s: float, slo_tpot_s: float) -> str | None:
    """A flag when no unit's p99 TTFT or TPOT reached `SLO_REGION` of its limit (None: some unit did)."""
    worst = {"ttft.p99": 0.0, "tpot.p99": 0.0}
    for r in results:
        for label in worst:
            value = r["metrics"].get(label)
            if value is not None:
                worst[label] = max(worst[label], value)
    if not results or worst["ttft.p99"] >= SLO_REGION * slo_ttft_s or worst["tpot.p99"] >= SLO_REGION * slo_tpot_s:
        return None
    return (
        f"the SLO was never at risk: the worst p99 TTFT of any arm in any unit was {worst['ttft.p99'] * 1e3:.0f} ms "
        f"(SLO {slo_ttft_s * 1e3:.0f} ms) and p99 TPOT {worst['tpot.p99'] * 1e3:.1f} ms (SLO {slo_tpot_s * 1e3:.0f} "
        f"ms), under {SLO_REGION:.0%} of each limit: the arms were compared at a load the engine does not feel, "
        "so their differences (or none) say nothing about the load the SLO is for; raise the load"
    )


def study_flags(
    plan: StudyPlan,
    arms: Sequence[Arm],
    workload: Any,
    results: Sequence[dict[str, Any]],
    slo_ttft_s: float,
    slo_tpot_s: float,
    classes: Sequence[Any] = (),
) -> list[str]:
    """Every flag of a finished study, as sentences (empty: nothing to flag). `classes`: the SLO classes the
    units ran with (the spec's and the plan's, harness/loadgen/classes.py `run_classes`)."""
    by_name = {a.name: a for a in arms}
    known = _known_noop(plan, by_name, workload, classes)
    flags = [f"variant {name} changes no request's treatment: {why}" for name, why in known.items()]
    for name in _seen_noop(plan, results):
        if name not in known:
            base = next(v.base for v in plan.variants if v.name == name) or "baseline"
            flags.append(
                f"variant {name} changes no request's treatment: every request was admitted, started and finished "
                f"as under {base} in every slice and trial ({by_name[name].change} acted on no request here: the "
                "engine ignores it, or no request waited long enough for it to act)"
            )
    region = _slo_region(plan, results, slo_ttft_s, slo_tpot_s)
    return [*flags, *([region] if region else [])]
