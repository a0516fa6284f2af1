"""A study's verdict: pick on the tuning slice, confirm on the held-out slice. Unit results in, tables out.

- Each arm's value of each metric on a slice is the mean over trials, with a 95% bootstrap interval over
  trials; its change against the baseline is taken per trial, then averaged, when every trial replayed the
  baseline's schedule (the judge's pairing decision, harness.study.pairing); otherwise it is the ratio of
  the two means, with no interval (so never a clear win).
- A variant *passes* a slice when every threshold of the plan holds at its mean.
- The pick: the passing variant best on the plan's `pick` metric on the tuning slice (none: no variant
  passed, the baseline stays).
- Confirmation: on the held-out slice the pick must pass again and still beat the baseline on `pick`.
  Then the pick "held"; otherwise it is "falsified", and the verdict says which threshold broke and what
  the held-out slice would have picked instead.
- Wins: per metric and slice, the best arm (never a reference arm), and whether its paired interval against the baseline
  excludes no change. The Pareto front is over throughput (higher) and p99 TTFT (lower).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.metrics import bootstrap_ci
from harness.study.metrics import Metric
from harness.study.plan import StudyPlan

CONFIDENCE = 0.95
N_BOOT = 2000


def _interval(values: list[float], seed: int) -> tuple[float | None, float | None]:
    if len(values) < 2:
        return None, None
    low, high = bootstrap_ci(np.asarray(values), np.mean, n_boot=N_BOOT, confidence=CONFIDENCE, seed=seed)
    return float(low), float(high)


def _ratio(values: list[float], baseline: list[float]) -> float | None:
    if not values or not baseline or not np.mean(baseline):
        return None
    return float(np.mean(values)) / float(np.mean(baseline)) - 1.0


def aggregate(results: list[dict[str, Any]], metric_labels: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """slice -> arm -> metric label -> {mean, ci, values, change (vs baseline, relative), change_ci, paired}."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    base = {(r["slice"], r["trial"]): r for r in results if r["arm"] == "baseline"}
    for r in results:
        out.setdefault(r["slice"], {}).setdefault(r["arm"], {})
    for slice_name, arms in out.items():
        for arm in arms:
            mine = [r for r in results if r["slice"] == slice_name and r["arm"] == arm]
            for k, label in enumerate(metric_labels):
                values = [r["metrics"].get(label) for r in mine]
                finite = [float(v) for v in values if v is not None]
                changes = []
                for r in mine:
                    b = base.get((slice_name, r["trial"]))
                    v, bv = r["metrics"].get(label), b["metrics"].get(label) if b else None
                    if v is not None and bv:
                        changes.append(v / bv - 1.0)
                low, high = _interval(finite, seed=k)
                paired = all((r.get("pairing") or {}).get("paired", True) for r in mine)
                change = float(np.mean(changes)) if changes else None
                c_low, c_high = _interval(changes, seed=k)
                if not paired:  # another schedule: the ratio of the means, no per-trial interval
                    theirs = [b["metrics"].get(label) for b in base.values() if b["slice"] == slice_name]
                    change, c_low, c_high = _ratio(finite, [float(v) for v in theirs if v is not None]), None, None
                arms[arm][label] = {
                    "mean": float(np.mean(finite)) if finite else None,
                    "ci": [low, high],
                    "values": values,
                    "change": change,
                    "change_ci": [c_low, c_high],
                    "paired": paired,
                }
    return out


def _passes(plan: StudyPlan, table: dict[str, dict[str, Any]], arm: str) -> tuple[bool, list[str]]:
    broken = []
    for pm in plan.metrics:
        if pm.threshold is None:
            continue
        label = pm.metric.label
        ok = pm.threshold.met(table[arm][label]["mean"], table["baseline"][label]["mean"])
        if not ok:
            broken.append(f"{label} {pm.threshold.text()} ({'no data' if ok is None else _show(table, arm, label)})")
    return not broken, broken


def _show(table: dict[str, dict[str, Any]], arm: str, label: str) -> str:
    cell = table[arm][label]
    change = cell["change"]
    return f"{cell['mean']:.4g}" + (f", {change:+.1%} vs baseline" if change is not None else "")


def _better(metric: Metric, a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is not None
    return a > b if metric.higher_is_better else a < b


def _best(plan: StudyPlan, table: dict[str, dict[str, Any]], arms: list[str]) -> str | None:
    best = None
    for arm in arms:
        if best is None or _better(
            plan.pick, table[arm][plan.pick.label]["mean"], table[best][plan.pick.label]["mean"]
        ):
            best = arm
    return best


def pareto_front(table: dict[str, dict[str, Any]], x: str = "throughput", y: str = "ttft.p99") -> list[str]:
    """Arms no other arm beats on both higher `x` and lower `y` (means)."""
    points = {
        a: (m[x]["mean"], m[y]["mean"])
        for a, m in table.items()
        if m[x]["mean"] is not None and m[y]["mean"] is not None
    }
    return sorted(
        a
        for a, (px, py) in points.items()
        if not any(qx >= px and qy <= py and (qx, qy) != (px, py) for qx, qy in points.values())
    )


def wins(
    table: dict[str, dict[str, Any]], metrics: list[Metric], reference: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Per metric: the best arm, its change against the baseline with interval, and whether it is clear.
    A `reference` arm (a tenant's run alone) is measured for comparison and never wins."""
    rows = []
    for metric in metrics:
        label = metric.label
        best = None
        for arm in (a for a in table if a not in reference):
            if _better(metric, table[arm][label]["mean"], table[best][label]["mean"] if best else None):
                best = arm
        if best is None:
            continue
        cell = table[best][label]
        low, high = cell["change_ci"]
        clear = best != "baseline" and low is not None and (low > 0 or high < 0)
        rows.append(
            {
                "metric": label,
                "higher_is_better": metric.higher_is_better,
                "best": best,
                "value": cell["mean"],
                "ci": cell["ci"],
                "change": cell["change"],
                "change_ci": cell["change_ci"],
                "clear": clear,
            }
        )
    return rows


def decide(plan: StudyPlan, results: list[dict[str, Any]], metrics: list[Metric]) -> dict[str, Any]:
    """The study's verdict (see the module docstring)."""
    labels = [m.label for m in metrics]
    tables = aggregate(results, labels)
    tuning, held = (tables.get(s.name, {}) for s in plan.slices)
    variants = [v.name for v in plan.variants if not v.reference]
    references = [v.name for v in plan.variants if v.reference]
    if "baseline" not in tuning or "baseline" not in held or any(v not in tuning or v not in held for v in variants):
        return {"outcome": "incomplete", "lines": ["the study did not finish every unit: no verdict"], "tables": tables}
    passing = [v for v in variants if _passes(plan, tuning, v)[0]]
    pick = _best(plan, tuning, passing)
    lines = [f"decision: {plan.decision}"]
    held_pick = _best(plan, held, [v for v in variants if _passes(plan, held, v)[0]])
    if pick is None:
        why = "; ".join(f"{v}: {', '.join(_passes(plan, tuning, v)[1])}" for v in variants)
        outcome = "no_pick"
        lines.append(f"no variant met the plan's thresholds on the tuning slice; the baseline stays ({why})")
        broken: list[str] = []
    else:
        ok, broken = _passes(plan, held, pick)
        beats = _better(plan.pick, held[pick][plan.pick.label]["mean"], held["baseline"][plan.pick.label]["mean"])
        if not beats:
            broken.append(f"{plan.pick.label} no better than the baseline ({_show(held, pick, plan.pick.label)})")
        outcome = "held" if ok and beats else "falsified"
        lines.append(f"picked on the tuning slice: {pick} ({plan.pick.label} {_show(tuning, pick, plan.pick.label)})")
        if outcome == "held":
            lines.append(f"HELD on the held-out slice: {pick} ({plan.pick.label} {_show(held, pick, plan.pick.label)})")
        else:
            lines.append(f"FALSIFIED on the held-out slice: {pick} broke {'; '.join(broken)}")
            if held_pick != pick:
                lines.append(f"the held-out slice would pick {held_pick or 'no variant (the baseline stays)'}")
    return {
        "outcome": outcome,
        "pick": pick,
        "held_out_pick": held_pick,
        "broken_on_held_out": broken,
        "passing_on_tuning": passing,
        "lines": lines,
        "tables": tables,
        "wins": {s.name: wins(tables[s.name], metrics, references) for s in plan.slices},
        "pareto": {s.name: pareto_front(tables[s.name]) for s in plan.slices},
    }
