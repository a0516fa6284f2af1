"""Per-class panels of a study (plan key `slo_classes`): each SLO class's attainment and goodput per arm and
slice, with intervals. Figures only: no verdict is drawn here (a study's verdicts are its plan's thresholds
and pick, harness/study/verdict.py, on the judge's pairing).

Each unit's figures are its run's own (`summary.slo_classes`, harness/metrics/slo_classes.py): attainment with
its Wilson interval, steady goodput with its exact Poisson interval. Across trials a cell is the mean over
trials with the study's bootstrap interval over trials (`verdict.aggregate`, as every other study cell); with
one trial it is that run's figure and its own interval, and `interval` says which.
"""

from __future__ import annotations

from typing import Any

from harness.study.verdict import aggregate

FIGURES = ("attainment", "goodput_rps")


def unit_classes(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A unit's per-class figures from its run's summary: requests, attainment, goodput (steady) and their
    intervals, or the reason a class has none."""
    out: dict[str, dict[str, Any]] = {}
    for name, row in (summary.get("slo_classes") or {}).items():
        if not row.get("requests"):
            out[name] = {"requests": 0, "reason": row.get("reason", "no request of this class ran")}
            continue
        out[name] = {
            "requests": row["requests"],
            "attainment": row["attainment"],
            "attainment_ci": row.get("attainment_ci"),
            "goodput_rps": row.get("goodput_rps_steady"),
            "goodput_rps_ci": row.get("goodput_rps_steady_ci"),
            "goodput_reason": row.get("goodput_rps_steady_reason"),
        }
    return out


def class_panels(results: list[dict[str, Any]], classes: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """slice -> class -> arm -> {"requests": per trial, figure: {mean, ci, interval, change, change_ci}}."""
    if not classes:
        return {}
    labels = [f"{c}/{f}" for c in classes for f in FIGURES]
    flat = [
        {**r, "metrics": {f"{c}/{f}": (r.get("classes") or {}).get(c, {}).get(f) for c in classes for f in FIGURES}}
        for r in results
    ]
    tables = aggregate(flat, labels)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for slice_name, arms in tables.items():
        for cls in classes:
            panel = out.setdefault(slice_name, {}).setdefault(cls, {})
            for arm, cells in arms.items():
                mine = [r for r in results if r["slice"] == slice_name and r["arm"] == arm]
                counts = [(r.get("classes") or {}).get(cls, {}).get("requests") for r in mine]
                row: dict[str, Any] = {"requests": counts}
                for figure in FIGURES:
                    cell = dict(cells[f"{cls}/{figure}"])
                    cell["interval"] = "over trials"
                    if len(mine) == 1:  # one trial: its run's own interval
                        own = (mine[0].get("classes") or {}).get(cls, {})
                        cell["ci"] = own.get(f"{figure}_ci") or [None, None]
                        cell["interval"] = "wilson" if figure == "attainment" else "poisson"
                    row[figure] = {k: cell[k] for k in ("mean", "ci", "interval", "change", "change_ci")}
                panel[arm] = row
    return out


def format_class_panels(panels: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The console's per-class panel: one line per slice, class and arm (n/a with no data, never 0)."""
    lines = []
    for slice_name, by_class in panels.items():
        lines.append(f"{slice_name} slice, per SLO class (mean; 95% interval; change vs baseline)")
        for cls, arms in by_class.items():
            for arm, row in arms.items():
                lines.append(
                    f"  {cls:>12} {arm:>14}: attainment {_show(row['attainment'], True)}, "
                    f"goodput {_show(row['goodput_rps'], False)}"
                )
    return "\n".join(lines)


def _show(cell: dict[str, Any], share: bool) -> str:
    value = cell["mean"]
    if value is None:
        return "n/a (no request of this class met a window)"
    fmt = (lambda v: f"{v:.1%}") if share else (lambda v: f"{v:.3g} req/s")
    low, high = cell["ci"]
    text = fmt(value) + (f" [{fmt(low)}, {fmt(high)}]" if low is not None and high is not None else "")
    change = cell["change"]
    return text + (f" ({change:+.0%})" if change is not None and abs(change) >= 0.005 else "")
