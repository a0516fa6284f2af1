"""What a gate rule can name: each metric's kind, unit and the statistics it takes.

Three kinds, because each needs its own noise model:
- latency: one value per request (per token gap for `itl`); rules name a statistic (`ttft.p99`);
- rate: a count per second of the run's steady window (whole run when it has none);
- share: a proportion of requests (failed, or meeting the SLO).
`goodput` is a rate whose noise lives in which requests met the SLO, so it is tested like a share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["latency", "rate", "share"]


@dataclass(frozen=True)
class MetricInfo:
    """A metric a gate rule may name: its kind (which noise model), unit and meaning."""

    name: str
    kind: Kind
    unit: str  # "s", "tok/s", "req/s" or "share"
    description: str
    per_request: bool = True  # False: pooled per token gap, so it cannot be paired by request


# ttfo: the first content token (harness.metrics.reasoning); TTFT itself for a request without reasoning
LATENCY_METRICS = (
    "ttft",
    "ttft_sent",
    "tpot",
    "e2e",
    "e2e_sent",
    "queue_delay",
    "queue_delay_sent",
    "normalized_latency",
    "ttfo",
)

METRICS: dict[str, MetricInfo] = {
    **{m: MetricInfo(m, "latency", "s", f"per-request {m} (docs/metrics.md)") for m in LATENCY_METRICS},
    "itl": MetricInfo("itl", "latency", "s", "every gap between consecutive tokens, pooled", per_request=False),
    "output_tok_s": MetricInfo("output_tok_s", "rate", "tok/s", "output tokens per second, steady window"),
    "total_tok_s": MetricInfo("total_tok_s", "rate", "tok/s", "prompt + output tokens per second, steady window"),
    "request_rate": MetricInfo("request_rate", "rate", "req/s", "successful requests finished per second"),
    "goodput": MetricInfo("goodput", "rate", "req/s", "SLO-meeting requests finished per second"),
    "slo_attainment": MetricInfo("slo_attainment", "share", "share", "share of requests meeting every SLO limit"),
    "error_rate": MetricInfo("error_rate", "share", "share", "share of requests that failed"),
}

TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def is_central(stat: str | None) -> bool:
    """Mean and median move with the bulk of requests, so a rank test is the right test for them; any
    other percentile can move with a handful of requests that a rank test hardly sees."""
    return stat in ("mean", "p50")


def quantile_of(stat: str) -> float | None:
    """ "p99" -> 0.99, "p99.9" -> 0.999, "mean" -> None."""
    return None if stat == "mean" else float(stat[1:]) / 100.0
