"""The verdict as the report shows it: the judge's headlines (harness.judge.headline: which engine wins
each headline metric, with 95% intervals), the validity flags, and the sentences at the top of the report.
Every number and decision here is computed in `harness`; this module only words and formats them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.judge.headline import Headline, Unit, headlines
from harness.metrics.intervals import Estimate
from harness.metrics.steady_rates import steady_rate_problem
from harness.metrics.stops import describe_stop
from reports import fmt
from reports.compare import METRIC_NAMES, Comparison
from reports.load import EngineRun, RunData

FORMAT: dict[Unit, Callable[[Any], str]] = {
    "seconds": fmt.seconds,
    "rate": fmt.number,
    "share": fmt.share,
    "usd": fmt.usd,
}


def formatter(h: Headline) -> Callable[[Any], str]:
    return FORMAT[h.unit]


def point(e: Estimate, formatter: Callable[[Any], str]) -> str:
    """ "1.2 s", or "≥ 16.1 s" for a lower bound."""
    return ("≥ " if e.at_least else "") + formatter(e.value)


def interval(e: Estimate, formatter: Callable[[Any], str]) -> str:
    """ "[1.0 s, 1.4 s]", "[12.3 s, unknown]" for a lower bound, or "" without one."""
    if e.extreme_of is not None:  # the judge's bound (harness.judge.verdict): no interval to show
        return f"(≈ the extreme of {e.extreme_of} values: unresolved)"
    if e.at_least and not fmt.missing(e.low):
        return f"[{formatter(e.low)}, unknown]"
    return fmt.ci(e.low, e.high, formatter) if e.has_ci else ""


def cell(e: Estimate, formatter: Callable[[Any], str]) -> str:
    """ "1.2 s [1.0 s, 1.4 s]", "≥ 16.1 s [12.3 s, unknown]" or "n/a"."""
    if fmt.missing(e.value):
        return "n/a"
    return " ".join(part for part in (point(e, formatter), interval(e, formatter)) if part)


@dataclass
class Verdict:
    """The report's one-paragraph answer: which engine wins which headline metrics."""

    headlines: list[Headline]
    flags: list[dict[str, str]]  # {"series", "name", "message"}
    lines: list[str] = field(default_factory=list)  # the sentences at the top of the report

    def wins(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for h in self.headlines:
            if h.winner and h.clear:
                out[h.winner] = out.get(h.winner, 0) + 1
        return out


def validity_flags(runs: list[RunData], series: list[EngineRun]) -> list[dict[str, str]]:
    flags: list[dict[str, str]] = []
    for er in series:
        for f in ((er.summary.get("validity") or {}).get("flags")) or []:
            ex = f", e.g. {', '.join(f.get('example_ids') or [])}" if f.get("example_ids") else ""
            flags.append(
                {
                    "series": er.label,
                    "name": f.get("name", "?"),
                    "message": f"{f.get('message', '')} ({f.get('count', '?')} requests{ex})",
                }
            )
        if er.stopped_early:
            flags.append(
                {
                    "series": er.label,
                    "name": "stopped_early",
                    "message": "the run stopped before every request finished"
                    + (f": {describe_stop(er.stop)}" if er.stop else ""),
                }
            )
        failed = (er.summary.get("requests") or {}).get("failed") or 0
        if failed:
            by_type = (er.summary.get("requests") or {}).get("failures_by_type") or {}
            kinds = ", ".join(f"{k}: {v}" for k, v in by_type.items())
            message = f"{failed} requests failed ({kinds}); they count against SLO attainment"
            flags.append({"series": er.label, "name": "failed_requests", "message": message})
        tokens, finishes = steady_rate_problem(er, "token"), steady_rate_problem(er, "finish")
        if tokens is not None or finishes is not None:
            what = "throughput and goodput are" if tokens is not None else "request rate and goodput are"
            message = f"{what} n/a: {tokens or finishes}"
            flags.append({"series": er.label, "name": "steady_rates_undefined", "message": message})
    for run in runs:
        for er in run.engine_runs:
            busy = (er.machine or {}).get("message") if (er.machine or {}).get("busy") else None
            if busy:
                message = f"trial {er.trial} {busy}: its timings include the neighbours' load"
                flags.append({"series": er.label, "name": "busy_machine", "message": message})
        imported = run.manifest.get("imported")
        if isinstance(imported, dict):
            for label, info in (imported.get("runs") or {}).items():
                series_label = label if len(runs) == 1 else f"{run.label}/{label}"
                for note in [
                    f"imported from {imported.get('tool')} ({imported.get('schema')})",
                    *((info or {}).get("notes") or []),
                ]:
                    flags.append({"series": series_label, "name": "imported", "message": note})
        for note in run.notes:
            flags.append({"series": run.label, "name": "report_note", "message": note})
    return flags


def _comparison_line(c: Comparison) -> str:
    how = (
        "per request on the same schedule (Wilcoxon signed-rank)"
        if c.kind == "paired"
        else "by distribution, different schedules (Mann-Whitney U)"
    )
    t = c.table
    sig = t[t["verdict"] != "no significant difference"]
    if sig.empty:
        return f"{c.b.label} vs {c.a.label}, {how}: no significant difference at α = 0.05."
    parts = [
        f"{METRIC_NAMES.get(str(metric), metric)} {fmt.seconds(row['delta'])} {fmt.ci(row['ci_low'], row['ci_high'])}"
        for metric, row in sig.head(3).iterrows()
    ]
    what = "median per-request difference" if c.kind == "paired" else "difference of medians"
    return f"{c.b.label} vs {c.a.label}, {how}: {what} " + ", ".join(parts) + "."


def verdict(runs: list[RunData], series: list[EngineRun], comparisons: list[Comparison]) -> Verdict:
    heads = headlines(series)
    v = Verdict(heads, validity_flags(runs, series))
    wins = v.wins()
    close = sum(1 for h in heads if h.winner and not h.clear and not h.point_only)
    if len(series) > 1:
        ranked = sorted(wins.items(), key=lambda kv: -kv[1])
        if ranked:
            lead, n = ranked[0]
            tail = "; ".join(f"{k} wins {m}" for k, m in ranked[1:])
            v.lines.append(
                f"{lead} wins {n} of {sum(not h.point_only for h in heads)} headline metrics with non-overlapping "
                "95% intervals"
                + (f"; {tail}" if tail else "")
                + (f"; {close} too close to call" if close else "")
                + "."
            )
        else:
            v.lines.append(f"No engine wins any headline metric clearly ({close} too close to call).")
        for h in heads:
            if h.key in ("ttft_p99", "output_tok_s", "goodput_rps") and h.winner and h.clear and h.margin:
                v.lines.append(f"{h.name}: {h.winner} is better by {h.margin}.")
    v.lines.extend(_comparison_line(c) for c in comparisons)
    if v.flags:
        v.lines.append(f"{len(v.flags)} validity flag(s) raised: read them before trusting the numbers.")
    else:
        v.lines.append("Every validity check passed.")
    return v
