"""A study's verdict: pick on the tuning slice, confirm on the held-out slice. Unit results in, tables out.

- Each arm's value of each metric on a slice is the mean over trials, with a 95% bootstrap interval over
  trials; its change against the baseline is taken per trial, then averaged, when every trial replayed the
  baseline's schedule (the judge's pairing decision, harness.study.pairing); otherwise it is the ratio of
  the two means, with no interval (so never a clear win).
- Each threshold is decided by the judge (harness.judge.verdict.decide) on an interval, never on a mean:
  a relative threshold on the arm's change interval, an absolute one on its value interval. It *holds*,
  *fails*, or the data *cannot tell*; an arm with one trial or an unpaired schedule has no interval, so
  its thresholds cannot be told.
- The pick: among the variants whose every threshold holds on the tuning slice, the best mean on the
  plan's `pick` metric (none: the baseline stays, and the verdict says which thresholds failed or could
  not be told).
- Confirmation on the held-out slice: every threshold again, and the change on `pick` against the
  baseline no worse than no change, each decided by the judge. The pick "held" when all hold, is
  "falsified" when one fails (the verdict says which, and what the held-out slice would have picked),
  and otherwise the held-out slice "cannot tell".
- Wins: per metric and slice, the best arm (never a reference arm), and the judge's outcome of "it beats the
  baseline" on its paired change interval (holds: a clear win; cannot tell without an interval or across no
  change). The Pareto front is over throughput (higher) and p99 TTFT (lower).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.judge.tests import IDENTICAL_TRIALS, TRIAL_CONFIDENCE, identical_trials, trial_mean_interval
from harness.judge.verdict import Outcome, trials_needed_words
from harness.judge.verdict import decide as judge
from harness.study.metrics import Metric
from harness.study.plan import StudyPlan

ALPHA = (1.0 - TRIAL_CONFIDENCE) / 2.0  # each end of the interval over trials, as a one-sided bound
UNPAIRED = "no interval: the arm replayed another schedule than the baseline's; pair the schedules to decide it"


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
                changes, theirs = [], []
                for r in mine:
                    b = base.get((slice_name, r["trial"]))
                    v, bv = r["metrics"].get(label), b["metrics"].get(label) if b else None
                    if v is not None and bv:
                        changes.append(v / bv - 1.0)
                        theirs.append(bv)
                low, high = trial_mean_interval(finite, seed=k)  # the judge's 95% bootstrap over trials
                paired = all((r.get("pairing") or {}).get("paired", True) for r in mine)
                change = float(np.mean(changes)) if changes else None
                c_low, c_high = trial_mean_interval(changes, seed=k)
                if not paired:  # another schedule: the ratio of the means, no per-trial interval
                    others = [b["metrics"].get(label) for b in base.values() if b["slice"] == slice_name]
                    change, c_low, c_high = _ratio(finite, [float(v) for v in others if v is not None]), None, None
                arms[arm][label] = {
                    "mean": float(np.mean(finite)) if finite else None,
                    "ci": [low, high],
                    "values": values,
                    "change": change,
                    "change_ci": [c_low, c_high],
                    "changes": changes if paired else [],
                    "paired": paired,
                    # zero-width intervals from copies, not certainty: the value's, and the change's (both sides)
                    "identical": identical_trials(finite),
                    "change_identical": paired and identical_trials(finite, theirs),
                }
    return out


def _threshold(cell: dict[str, Any], op: str, tolerance: float, relative: bool) -> Outcome:
    """The judge's outcome for "value (or change) op tolerance" on this arm's interval."""
    low, high = cell["change_ci"] if relative else cell["ci"]
    nan = float("nan")
    return judge(nan if low is None else low, nan if high is None else high, tolerance, higher_is_worse=op == "<=")


def needs(cell: dict[str, Any], tolerance: float, relative: bool) -> str:
    """What a claim on this cell that the data cannot tell would need: trials per arm, sized by the judge
    from the spread over trials of the value (absolute) or of the paired change (relative)."""
    if relative and not cell.get("paired", True):
        return UNPAIRED
    per_trial = cell.get("changes", []) if relative else [v for v in cell.get("values", []) if v is not None]
    return trials_needed_words(per_trial, tolerance, ALPHA, side="arm")


def _judged(plan: StudyPlan, table: dict[str, dict[str, Any]], arm: str) -> list[tuple[Outcome, str]]:
    """Each of the plan's thresholds on `arm`: (outcome, what it says, with what it needs when undecided)."""
    out = []
    for pm in plan.metrics:
        if pm.threshold is None:
            continue
        t, label = pm.threshold, pm.metric.label
        tolerance = t.value / 100.0 if t.relative else t.value
        cell, what = table[arm][label], f"{label} {t.text()} ({_show(table, arm, label)})"
        outcome = _threshold(cell, t.op, tolerance, t.relative)
        out.append((outcome, _said(outcome, what, cell, tolerance, t.relative)))
    return out


def _said(outcome: Outcome, what: str, cell: dict[str, Any], tolerance: float, relative: bool) -> str:
    """`what: outcome`, with what would decide it when the data cannot tell, and whether an outcome rests on
    identical trials (the outcome stands: a fact of a deterministic engine, said as such)."""
    said = f"{what}: {WORD[outcome]}"
    if outcome == "cannot_tell":
        return f"{said}, {needs(cell, tolerance, relative)}"
    return f"{said} ({ON_COPIES})" if not relative and cell.get("identical") else said  # `_show` says the change's


ON_COPIES = "on identical trials: no run-to-run noise"  # instead of a zero-width [x, x]


def _passes(plan: StudyPlan, table: dict[str, dict[str, Any]], arm: str) -> tuple[bool, list[str]]:
    """Whether every threshold holds on `arm`, and those that do not, with the judge's word for each."""
    broken = [said for o, said in _judged(plan, table, arm) if o != "holds"]
    return not broken, broken


WORD = {"holds": "holds", "fails": "fails", "cannot_tell": "cannot tell"}


def _show(table: dict[str, dict[str, Any]], arm: str, label: str) -> str:
    cell = table[arm][label]
    if cell["mean"] is None:
        return "no data"
    change, (low, high) = cell["change"], cell["change_ci"]
    shown = f"{cell['mean']:.4g}" + (f", {change:+.1%} vs baseline" if change is not None else "")
    if arm == "baseline" or change is None:
        return shown
    if cell.get("change_identical"):
        return f"{shown}, {ON_COPIES}"
    return shown + (f" [{low:+.1%}, {high:+.1%}]" if low is not None else ", no interval")


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
        # the claim "best beats the baseline" decided by the judge on the change's interval (no interval: one
        # trial or unpaired, so the data cannot tell); the baseline itself claims nothing
        outcome: Outcome | None = None
        if best != "baseline":
            nan = float("nan")
            lo, hi = (nan, nan) if low is None else (low, high)
            outcome = judge(lo, hi, 0.0, higher_is_worse=not metric.higher_is_better)
        undecided = needs(cell, 0.0, True) if outcome == "cannot_tell" else None
        copies = outcome is not None and bool(cell.get("change_identical"))
        rows.append(
            {
                "metric": label,
                "higher_is_better": metric.higher_is_better,
                "best": best,
                "value": cell["mean"],
                "ci": cell["ci"],
                "change": cell["change"],
                "change_ci": cell["change_ci"],
                "outcome": outcome,
                "needs": undecided,
                "identical_trials": copies,
                "clear": outcome == "holds",
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
        # a variant none of whose thresholds fails might hold with more data: the study cannot tell yet
        open_ = [v for v in variants if all(o != "fails" for o, _ in _judged(plan, tuning, v))]
        outcome = "cannot_tell" if open_ else "no_pick"
        if open_:
            lines.append(f"CANNOT TELL on the tuning slice: the data do not decide {', '.join(open_)}")
        lines.append(f"no variant's thresholds all hold on the tuning slice; the baseline stays ({why})")
        broken: list[str] = []
    else:
        judged = _judged(plan, held, pick)
        metric = plan.pick
        beats = _threshold(held[pick][metric.label], ">=" if metric.higher_is_better else "<=", 0.0, True)
        beat = f"{metric.label} no worse than the baseline ({_show(held, pick, metric.label)})"
        judged.append((beats, _said(beats, beat, held[pick][metric.label], 0.0, True)))
        broken = [said for o, said in judged if o != "holds"]
        found = {o for o, _ in judged}
        outcome = "falsified" if "fails" in found else "cannot_tell" if "cannot_tell" in found else "held"
        lines.append(f"picked on the tuning slice: {pick} ({metric.label} {_show(tuning, pick, metric.label)})")
        if outcome == "held":
            lines.append(f"HELD on the held-out slice: {pick} ({metric.label} {_show(held, pick, metric.label)})")
        elif outcome == "falsified":
            lines.append(f"FALSIFIED on the held-out slice: {pick} broke {'; '.join(broken)}")
        else:
            lines.append(f"CANNOT TELL on the held-out slice: the data do not decide {pick}: {'; '.join(broken)}")
        if outcome != "held" and held_pick != pick:
            lines.append(f"the held-out slice would pick {held_pick or 'no variant (the baseline stays)'}")
    if any(ON_COPIES in line for line in lines):
        lines.append(f"identical trials: {IDENTICAL_TRIALS}")
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
