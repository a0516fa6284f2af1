"""Prometheus text exposition (format 0.0.4) for `GET /metrics`, without a client library.

Step times are observed from the engine's own thread (its step sink), TTFT on the event loop, so
each histogram takes a lock; a scrape copies under the same lock and sees a consistent snapshot.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engines.step_record import StepRecord

# Seconds. A CPU step of a small model takes milliseconds, a big model's seconds: cover both.
STEP_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0)
TTFT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    """A Prometheus histogram with fixed buckets, safe to observe from several threads."""

    def __init__(self, name: str, help_text: str, buckets: Sequence[float]) -> None:
        self.name = name
        self.help = help_text
        self.bounds = tuple(sorted(buckets))
        self._counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.bounds, value)  # le: a value equal to a bound belongs to it
        with self._lock:
            self._counts[index] += 1
            self._sum += value

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self._counts)

    def render(self) -> list[str]:
        with self._lock:
            counts = list(self._counts)
            total = self._sum
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        cumulative = 0
        for bound, n in zip(self.bounds, counts, strict=False):
            cumulative += n
            lines.append(f'{self.name}_bucket{{le="{bound:g}"}} {cumulative}')
        cumulative += counts[-1]
        lines.append(f'{self.name}_bucket{{le="+Inf"}} {cumulative}')
        lines.append(f"{self.name}_sum {total:.9g}")
        lines.append(f"{self.name}_count {cumulative}")
        return lines


@dataclass
class ServerMetrics:
    """Counters the handlers keep; gauges that read the engine when scraped."""

    running: int = 0  # admitted by the engine, not finished
    waiting: int = 0  # submitted to the engine, not yet admitted
    prompt_tokens: int = 0
    generation_tokens: int = 0
    prefix_cache_hit_tokens: int = 0  # prompt tokens admissions took from the prefix cache (step records)
    preemptions: int = 0  # sequences the engine preempted (step records)
    finished: dict[str, int] = field(default_factory=dict)  # by finish reason
    rejected: dict[int, int] = field(default_factory=dict)  # by HTTP status
    kv_blocks_used: Callable[[], int | None] = lambda: None
    kv_blocks_total: Callable[[], int | None] = lambda: None
    kv_tokens_used: Callable[[], int | None] = lambda: None  # blocks held x block size (GET /get_load)
    step_seconds: Histogram = field(
        default_factory=lambda: Histogram("batchmark_step_seconds", "Engine step duration.", STEP_BUCKETS)
    )
    ttft_seconds: Histogram = field(
        default_factory=lambda: Histogram(
            "batchmark_time_to_first_token_seconds",
            "From the request reaching the server to its first output token.",
            TTFT_BUCKETS,
        )
    )

    def on_step(self, record: StepRecord) -> None:
        self.step_seconds.observe(record.t_end - record.t_start)
        self.prefix_cache_hit_tokens += record.prefix_cached_tokens
        self.preemptions += len(record.preempted)

    def render(self) -> str:
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
            lines.extend((f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"))
            lines.extend(f"{name}{labels} {value:g}" for labels, value in samples)

        metric("batchmark_requests_running", "gauge", "Requests the engine is computing.", [("", self.running)])
        metric("batchmark_requests_waiting", "gauge", "Requests queued for the engine.", [("", self.waiting)])
        used, total = self.kv_blocks_used(), self.kv_blocks_total()
        if used is not None:
            metric("batchmark_kv_blocks_used", "gauge", "KV-cache blocks in use.", [("", used)])
        if total is not None:
            metric("batchmark_kv_blocks_total", "gauge", "KV-cache blocks in the pool.", [("", total)])
        metric(
            "batchmark_prompt_tokens_total",
            "counter",
            "Prompt tokens of admitted requests.",
            [("", self.prompt_tokens)],
        )
        metric(
            "batchmark_prefix_cache_hit_tokens_total",
            "counter",
            "Prompt tokens taken from the prefix cache instead of computed (a readmission after preemption too).",
            [("", self.prefix_cache_hit_tokens)],
        )
        metric(
            "batchmark_generation_tokens_total", "counter", "Output tokens generated.", [("", self.generation_tokens)]
        )
        metric(
            "batchmark_requests_finished_total",
            "counter",
            "Finished requests by reason.",
            [(f'{{reason="{k}"}}', v) for k, v in sorted(self.finished.items())],
        )
        metric(
            "batchmark_requests_rejected_total",
            "counter",
            "Requests refused before the engine, by status.",
            [(f'{{status="{k}"}}', v) for k, v in sorted(self.rejected.items())],
        )
        lines.extend(self.step_seconds.render())
        lines.extend(self.ttft_seconds.render())
        lines.extend(self._vllm_names(used, total))
        return "\n".join(lines) + "\n"

    def _vllm_names(self, used: int | None, total: int | None) -> list[str]:
        """The same state under vLLM's metric names, so that tools written for vLLM (and `--scrape`) read it.

        vLLM counts prefix-cache queries and hits in prompt tokens; the queries are the admitted prompt tokens.
        """
        samples: list[tuple[str, str, float | None]] = [
            ("vllm:num_requests_running", "gauge", self.running),
            ("vllm:num_requests_waiting", "gauge", self.waiting),
            ("vllm:kv_cache_usage_perc", "gauge", used / total if used is not None and total else None),
            ("vllm:num_preemptions_total", "counter", self.preemptions),
            ("vllm:prefix_cache_queries_total", "counter", self.prompt_tokens),
            ("vllm:prefix_cache_hits_total", "counter", self.prefix_cache_hit_tokens),
            ("vllm:prompt_tokens_total", "counter", self.prompt_tokens),
            ("vllm:generation_tokens_total", "counter", self.generation_tokens),
        ]
        lines: list[str] = []
        for name, kind, value in samples:
            if value is not None:  # an unknown gauge is absent, never 0
                lines.extend((f"# TYPE {name} {kind}", f"{name} {value:g}"))
        return lines
