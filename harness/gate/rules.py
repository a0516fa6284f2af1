"""Gate rules: `METRIC[.STAT] OP THRESHOLD`, e.g. `ttft.p99 <= +10%` (grammar in docs/gate.md).

The threshold's form says what is compared:
- signed percentage (`+10%`, `-5%`): relative change of the candidate against the baseline;
- signed number with the metric's unit (`+50ms`, `-20`, `-2pp`): absolute change against the baseline;
- unsigned number (`500ms`, `0.9`, `1%`): a limit on the candidate's own value (no baseline needed).
An explicit sign is what separates a change from a limit, so `error_rate <= 1%` (a limit) and
`error_rate <= +1%` (a relative change) cannot be confused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from harness.gate.catalog import METRICS, TIME_UNITS, MetricInfo

Op = Literal["<=", ">="]
ThresholdKind = Literal["relative", "delta", "absolute"]

_RULE = re.compile(
    r"^\s*(?P<metric>[a-z][a-z0-9_]*)(?:\.(?P<stat>[a-z0-9.]+))?\s*(?P<op><=|>=|<|>|==|=)\s*(?P<threshold>.*?)\s*$"
)
_THRESHOLD = re.compile(r"^(?P<sign>[+-])?(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>%|pp|us|ms|s)?$")
_STAT = re.compile(r"^(mean|p(\d+(?:\.\d+)?))$")


class RuleError(ValueError):
    """A malformed rule; `field` names the part that is wrong (metric, statistic, operator, threshold)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Threshold:
    """How far a metric may move: relative (+10%), a delta (+1pp, +5ms) or an absolute limit (<= 2s)."""

    kind: ThresholdKind
    value: float  # relative: a fraction (+0.10); delta and absolute: the metric's base unit (s, tok/s, share)
    text: str


@dataclass(frozen=True)
class Rule:
    """One parsed gate rule: metric, statistic, direction and threshold, with where it was written."""

    text: str
    metric: str
    stat: str | None  # "mean", "p50", "p99.9"; None for rates and shares
    op: Op
    threshold: Threshold
    alpha: float | None = None  # overrides the gate's alpha for this rule
    line: int | None = None  # where the rules file holds it

    @property
    def name(self) -> str:
        return f"{self.metric}.{self.stat}" if self.stat else self.metric

    @property
    def info(self) -> MetricInfo:
        return METRICS[self.metric]

    @property
    def higher_is_worse(self) -> bool:
        return self.op == "<="

    @property
    def needs_baseline(self) -> bool:
        return self.threshold.kind != "absolute"


def parse_rule(text: str, *, alpha: float | None = None, line: int | None = None) -> Rule:
    """Parse one rule; raises RuleError naming the faulty part."""
    match = _RULE.match(text)
    if match is None:
        raise RuleError(f"expected METRIC[.STAT] <= or >= THRESHOLD, got {text!r}", "rule")
    metric, stat, op = match["metric"], match["stat"], match["op"]
    info = METRICS.get(metric)
    if info is None:
        raise RuleError(f"unknown metric {metric!r} in {text!r} (known: {', '.join(METRICS)})", "metric")
    if op not in ("<=", ">="):
        raise RuleError(f"operator {op!r} in {text!r}: use <= (upper bound) or >= (lower bound)", "operator")
    stat = _check_stat(info, stat, text)
    threshold = _parse_threshold(info, match["threshold"], text)
    if threshold.kind != "absolute" and (threshold.value < 0 if op == "<=" else threshold.value > 0):
        bound = "increase" if op == "<=" else "decrease"
        raise RuleError(
            f"{text!r}: a {op!r} rule bounds the {bound} it allows, so its change threshold needs "
            f"the sign {'+' if op == '<=' else '-'}",
            "threshold",
        )
    return Rule(text.strip(), metric, stat, op, threshold, alpha, line)  # type: ignore[arg-type]


def _check_stat(info: MetricInfo, stat: str | None, text: str) -> str | None:
    if info.kind != "latency":
        if stat is not None:
            raise RuleError(f"{info.name} is a single number per run and takes no statistic ({text!r})", "statistic")
        return None
    if stat is None:
        raise RuleError(
            f"{info.name} needs a statistic, e.g. {info.name}.p99 or {info.name}.mean ({text!r})", "statistic"
        )
    m = _STAT.match(stat)
    if m is None or (m[2] is not None and not 0 < float(m[2]) < 100):
        raise RuleError(
            f"statistic {stat!r} in {text!r}: use mean or pQ with 0 < Q < 100 (p50, p99, p99.9)", "statistic"
        )
    return stat


def _parse_threshold(info: MetricInfo, raw: str, text: str) -> Threshold:
    m = _THRESHOLD.match(raw)
    if m is None:
        raise RuleError(f"threshold {raw!r} in {text!r}: expected e.g. +10%, -5%, +50ms, 500ms or 0.9", "threshold")
    signed, number, unit = m["sign"] is not None, float(m["number"]), m["unit"]
    value = -number if m["sign"] == "-" else number
    if signed and unit == "%":
        return Threshold("relative", value / 100.0, raw)
    scale = _unit_scale(info, unit, raw, text)
    if info.unit == "share" and not (signed or 0.0 <= value * scale <= 1.0):
        # a share lies in 0..100%: a limit outside it holds (or breaks) whatever the runs did
        raise RuleError(f"threshold {raw!r} in {text!r}: a limit on a share lies in 0..100%", "threshold")
    return Threshold("delta" if signed else "absolute", value * scale, raw)


def _unit_scale(info: MetricInfo, unit: str | None, raw: str, text: str) -> float:
    if info.unit == "s":
        if unit not in TIME_UNITS:
            raise RuleError(
                f"threshold {raw!r} in {text!r}: {info.name} is a time, give a unit (us, ms or s)", "threshold"
            )
        return TIME_UNITS[unit]
    if info.unit == "share":
        if unit in ("%", "pp"):
            return 0.01
        if unit is None:
            return 1.0
        raise RuleError(f"threshold {raw!r} in {text!r}: {info.name} is a share, write 0.01, 1% or 1pp", "threshold")
    if unit is not None:
        raise RuleError(
            f"threshold {raw!r} in {text!r}: {info.name} is in {info.unit}, write the number without a unit",
            "threshold",
        )
    return 1.0
