"""The report's headline verdict: which engine run wins each headline metric, with 95% intervals.

Intervals: latency percentiles carry the summary's percentile-bootstrap interval; throughput and goodput
a batch-means interval (harness.metrics.steady_rates); SLO attainment a Wilson score interval. A winner
is "clear" when its interval does not overlap any other engine's; otherwise the metric is too close to
call. Cost has no interval (it is wall time priced) and is ranked on its point value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from harness.judge.verdict import tail_is_resolved
from harness.metrics.intervals import Estimate, wilson
from harness.metrics.steady_rates import EngineRunView, goodput_estimate, throughput_estimate

Unit = Literal["seconds", "rate", "share", "usd"]  # how reports/ formats the numbers (reports.verdict.FORMAT)


class LabelledRun(EngineRunView, Protocol):
    label: str


@dataclass
class Headline:
    """One headline metric across engines, and which engine clearly wins it, if any."""

    key: str
    name: str
    better: Literal["lower", "higher"]
    unit: Unit
    estimates: dict[str, Estimate]
    winner: str | None = None
    clear: bool = False  # the winner's interval does not overlap any other's
    point_only: bool = False  # no intervals (cost): ranked on point values, never counted as a clear win
    margin: str = ""  # the winner's ratio to the runner-up: "2.00x", "at least 1.5x"

    def decide(self) -> None:
        known = {k: e for k, e in self.estimates.items() if e.known}
        if len(known) < 2:
            return
        pick = min if self.better == "lower" else max
        self.winner = pick(known, key=lambda k: known[k].value)  # type: ignore[arg-type, return-value]
        best = known[self.winner]
        others = [e for k, e in known.items() if k != self.winner]
        bounded = all(e.has_ci or e.at_least for e in known.values())
        if self.better == "lower" and bounded:
            # a lower bound may lie anywhere above its value: it can lose clearly, never win clearly
            self.clear = not best.at_least and all(o.beaten_by(best.high) for o in others)  # type: ignore[arg-type]
        elif best.has_ci and all(o.has_ci for o in others):
            self.clear = all(best.low > o.high for o in others)  # type: ignore[operator]
        else:
            self.point_only = True
        runner = pick((e.value for e in others), default=None)  # type: ignore[type-var]
        if runner is not None and best.value not in (None, 0) and runner != 0:
            ratio = runner / best.value if self.better == "lower" else best.value / runner  # type: ignore[operator]
            self.margin = f"{ratio:,.0f}x" if ratio >= 100 else (f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x")
            if not best.at_least and any(o.at_least and o.value == runner for o in others):
                self.margin = f"at least {self.margin}"


def _percentile(er: LabelledRun, metric: str, label: str) -> Estimate:
    block = (er.summary.get("latency") or {}).get(metric) or {}
    row = (block.get("percentiles") or {}).get(label) or {}
    at_least, count = bool(row.get("lower_bound")), block.get("count")
    if count and not tail_is_resolved(int(count), float(label[1:]) / 100.0):
        # the sample's extreme: its bootstrap interval would look tight, so it carries none and never wins clearly
        return Estimate(row.get("value"), at_least=at_least, extreme_of=int(count))
    return Estimate(row.get("value"), row.get("ci_low"), row.get("ci_high"), at_least=at_least)


def headlines(series: list[LabelledRun]) -> list[Headline]:
    """Every headline metric of the engine runs `series`, each decided."""
    out: list[Headline] = []
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")):
        for label in ("p50", "p99"):
            est = {er.label: _percentile(er, metric, label) for er in series}
            out.append(Headline(f"{metric}_{label}", f"{name} {label}", "lower", "seconds", est))
    throughput = {er.label: throughput_estimate(er) for er in series}
    out.append(Headline("output_tok_s", "output throughput (tok/s)", "higher", "rate", throughput))
    goodput = {er.label: goodput_estimate(er) for er in series}
    out.append(Headline("goodput_rps", "goodput (SLO-meeting req/s)", "higher", "rate", goodput))
    attain = {}
    for er in series:
        slo = er.summary.get("slo") or {}
        attain[er.label] = wilson(int(slo.get("met") or 0), int(slo.get("requests") or 0))
    out.append(Headline("slo_attainment", "SLO attainment", "higher", "share", attain))
    cost = {er.label: Estimate((er.summary.get("cost") or {}).get("usd_per_1m_output_tokens")) for er in series}
    out.append(Headline("usd_per_1m_out", "$ per 1M output tokens", "lower", "usd", cost))
    for h in out:
        h.decide()
    return out
