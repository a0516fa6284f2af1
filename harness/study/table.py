"""The study's console table: each arm's mean per metric on each slice, with the pick and the Pareto front."""

from __future__ import annotations

from typing import Any

from harness.study.metrics import Metric


def _cell(cell: dict[str, Any], unit: str) -> str:
    value = cell["mean"]
    if value is None:
        return "-"
    text = (
        f"{value * 1e3:.0f} ms" if unit == "s" and value < 10 else f"{value:.1f} s" if unit == "s" else f"{value:.3g}"
    )
    change = cell["change"]
    return text + (f" ({change:+.0%})" if change is not None and abs(change) >= 0.005 else "")


def format_study(verdict: dict[str, Any], metrics: list[Metric]) -> str:
    lines = []
    for slice_name, table in verdict["tables"].items():
        header = ["arm", *(m.label for m in metrics)]
        rows = []
        for arm, cells in table.items():
            mark = " *" if arm == verdict.get("pick") else ""
            front = " ^" if arm in (verdict.get("pareto") or {}).get(slice_name, []) else ""
            rows.append([arm + mark + front, *(_cell(cells[m.label], m.unit) for m in metrics)])
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        lines.append(
            f"{slice_name} slice (mean over trials; change vs baseline; * pick, ^ Pareto front of "
            "throughput and p99 TTFT)"
        )
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
