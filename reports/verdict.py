"""The verdict: which engine wins each headline metric, with 95% confidence intervals, and whether the
runs can be trusted as they stand.

Intervals: latency percentiles carry the summary's percentile-bootstrap CI; throughput and goodput a
batch-means CI (the steady window cut into `BATCHES` equal sub-windows, Student t over the
sub-window rates); SLO attainment a Wilson score interval. A winner is "clear" when its interval
does not overlap any other engine's; otherwise the metric is called too close to call. Cost has no
interval (it is wall time priced) and is ranked on its point value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from harness.metrics.slo import SLO, slo_table
from harness.metrics.stops import describe_stop
from harness.metrics.throughput import events_problem, rate_problem, steady_window
from reports import fmt
from reports.compare import METRIC_NAMES, Comparison
from reports.load import EngineRun, RunData

BATCHES = 20
Z95 = 1.959963984540054


@dataclass
class Estimate:
    """A number with its confidence interval, when it has one."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None  # why value is None, when it is undefined rather than unknown
    at_least: bool = False  # a lower bound: requests cut off while waiting reach it (its `high` is unknown)

    @property
    def has_ci(self) -> bool:
        return not (fmt.missing(self.low) or fmt.missing(self.high))

    def beaten_by(self, high: float) -> bool:
        """Whether a value below `high` is clearly lower than this one (a lower bound needs only its low end)."""
        return not fmt.missing(self.low) and high < self.low and (self.at_least or self.has_ci)

    def point(self, formatter: Callable[[Any], str]) -> str:
        """ "1.2 s", or "≥ 16.1 s" for a lower bound."""
        return ("≥ " if self.at_least else "") + formatter(self.value)

    def interval(self, formatter: Callable[[Any], str]) -> str:
        """ "[1.0 s, 1.4 s]", "[12.3 s, unknown]" for a lower bound, or "" without one."""
        if self.at_least and not fmt.missing(self.low):
            return f"[{formatter(self.low)}, unknown]"
        return fmt.ci(self.low, self.high, formatter) if self.has_ci else ""

    def cell(self, formatter: Callable[[Any], str]) -> str:
        """ "1.2 s [1.0 s, 1.4 s]", "≥ 16.1 s [12.3 s, unknown]" or "n/a"."""
        if fmt.missing(self.value):
            return "n/a"
        return " ".join(part for part in (self.point(formatter), self.interval(formatter)) if part)


@dataclass
class Headline:
    """One headline metric across engines, and which engine clearly wins it, if any."""

    key: str
    name: str
    better: str  # "lower" or "higher"
    formatter: Callable[[Any], str]
    estimates: dict[str, Estimate]
    winner: str | None = None
    clear: bool = False  # the winner's interval does not overlap any other's
    point_only: bool = False  # no intervals (cost): ranked on point values, never counted as a clear win
    margin: str = ""

    def decide(self) -> None:
        known = {k: e for k, e in self.estimates.items() if not fmt.missing(e.value)}
        if len(known) < 2:
            return
        pick = min if self.better == "lower" else max
        self.winner = pick(known, key=lambda k: known[k].value)
        best = known[self.winner]
        others = [e for k, e in known.items() if k != self.winner]
        bounded = all(e.has_ci or e.at_least for e in known.values())
        if self.better == "lower" and bounded:
            # a lower bound may lie anywhere above its value: it can lose clearly, never win clearly
            self.clear = not best.at_least and all(o.beaten_by(best.high) for o in others)
        elif best.has_ci and all(o.has_ci for o in others):
            self.clear = all(best.low > o.high for o in others)
        else:
            self.point_only = True
        runner = pick((e.value for e in others), default=None)
        if runner is not None and best.value not in (None, 0) and runner != 0:
            ratio = runner / best.value if self.better == "lower" else best.value / runner
            self.margin = f"{ratio:,.0f}x" if ratio >= 100 else (f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x")
            if not best.at_least and any(o.at_least and o.value == runner for o in others):
                self.margin = f"at least {self.margin}"


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


def _pct(er: EngineRun, metric: str, label: str) -> Estimate:
    row = (((er.summary.get("latency") or {}).get(metric) or {}).get("percentiles") or {}).get(label) or {}
    return Estimate(row.get("value"), row.get("ci_low"), row.get("ci_high"), at_least=bool(row.get("lower_bound")))


def batch_means(times: np.ndarray, start: float, end: float, batches: int = BATCHES) -> Estimate:
    """Events per second in [start, end] with a batch-means 95% CI (cut at zero: a rate is never negative)."""
    if not (end > start) or times.size == 0:
        return Estimate(None)
    edges = np.linspace(start, end, batches + 1)
    counts, _ = np.histogram(times[(times >= start) & (times <= end)], bins=edges)
    rates = counts / np.diff(edges)
    mean, sd = float(rates.mean()), float(rates.std(ddof=1))
    half = float(sps.t.ppf(0.975, batches - 1)) * sd / math.sqrt(batches)
    return Estimate(mean, max(mean - half, 0.0), mean + half)


def wilson(successes: int, n: int) -> Estimate:
    if n <= 0:
        return Estimate(None)
    p = successes / n
    denom = 1 + Z95**2 / n
    center = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return Estimate(p, center - half, center + half)


def steady_rate_problem(er: EngineRun, event: str = "finish") -> str | None:
    """Why the run's steady-window rates of `event` ("finish" or "token") are undefined (None: defined): the
    rule of `harness.metrics.throughput.rate_problem`, applied to the records, so runs recorded before the
    rule existed are judged by it too."""
    if er.records.empty:  # another tool's aggregates: the summary says why it has no steady window
        return ((er.summary.get("throughput") or {}).get("steady") or {}).get("reason") or "no records"
    window = steady_window(er.records)
    if window is None or event == "finish":
        return rate_problem(er.records, window, "steady", event)
    return events_problem(_ok_tokens(er), window, "steady", "token")  # token times are flat here, not per row


def _ok_tokens(er: EngineRun) -> np.ndarray:
    ok = er.latencies["succeeded"].to_numpy()
    return er.tokens.flat[ok[er.tokens.owner]] if er.tokens.flat.size else er.tokens.flat


def _steady(er: EngineRun, event: str) -> tuple[float, float] | None:
    window = steady_window(er.records)
    return (window.start, window.end) if window is not None and steady_rate_problem(er, event) is None else None


def throughput_estimate(er: EngineRun) -> Estimate:
    window = _steady(er, "token")
    if window is None:
        return Estimate(None, reason=steady_rate_problem(er, "token"))
    return batch_means(_ok_tokens(er), *window)


def goodput_estimate(er: EngineRun) -> Estimate:
    window = _steady(er, "finish")
    if window is None:
        return Estimate(None, reason=steady_rate_problem(er, "finish"))
    limits = ((er.summary.get("slo") or {}).get("slo")) or {}
    slo = SLO(**{k: limits.get(k) for k in ("ttft_s", "tpot_s", "e2e_s")})
    met = slo_table(er.latencies, slo)["meets_slo"].to_numpy()
    finish = er.records["t_finish"].to_numpy(dtype=np.float64)[met]
    return batch_means(finish, *window)


def headlines(series: list[EngineRun]) -> list[Headline]:
    out: list[Headline] = []
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")):
        for label in ("p50", "p99"):
            est = {er.label: _pct(er, metric, label) for er in series}
            out.append(Headline(f"{metric}_{label}", f"{name} {label}", "lower", fmt.seconds, est))
    out.append(
        Headline(
            "output_tok_s",
            "output throughput (tok/s)",
            "higher",
            fmt.number,
            {er.label: throughput_estimate(er) for er in series},
        )
    )
    out.append(
        Headline(
            "goodput_rps",
            "goodput (SLO-meeting req/s)",
            "higher",
            fmt.number,
            {er.label: goodput_estimate(er) for er in series},
        )
    )
    attain = {}
    for er in series:
        slo = er.summary.get("slo") or {}
        attain[er.label] = wilson(int(slo.get("met") or 0), int(slo.get("requests") or 0))
    out.append(Headline("slo_attainment", "SLO attainment", "higher", fmt.share, attain))
    cost = {er.label: Estimate((er.summary.get("cost") or {}).get("usd_per_1m_output_tokens")) for er in series}
    out.append(Headline("usd_per_1m_out", "$ per 1M output tokens", "lower", fmt.usd, cost))
    for h in out:
        h.decide()
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
                for note in [f"imported from {imported.get('tool')} ({imported.get('schema')})",
                             *((info or {}).get("notes") or [])]:  # fmt: skip
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
