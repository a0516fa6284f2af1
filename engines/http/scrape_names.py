"""A server's Prometheus text read into one set of fields, whichever server it is (vLLM, SGLang, TGI, batchmark serve).

Each field lists the names servers use for it, first match wins; samples of one name with several label sets
(vLLM labels by model and engine) are summed. A field no name matched is absent: the server did not say, which
is not 0. batchmark serve exposes vLLM's names too, so the vLLM map reads it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# Field -> names in order of preference. Gauges are read as they are; `_total` counters are deltas'd by the reader.
NAMES: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs", "tgi_batch_current_size"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size"),
    # A fraction in [0, 1]; vLLM renamed gpu_cache_usage_perc to kv_cache_usage_perc in v0.10.
    "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
    "preemptions": ("vllm:num_preemptions_total",),
    # Prompt tokens looked up in / found in the prefix cache (vLLM v1 counts tokens).
    "prefix_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "spec_drafts": ("vllm:spec_decode_num_drafts_total",),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total",),
    "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens_total",),
}

# vLLM's accepted tokens per draft position (label `position`): drafts that accepted at least i+1 tokens, since
# acceptance stops at the first rejected draft token. Kept per position, as `spec_accepted_per_pos` (a list), so
# that a run's acceptance histogram can be derived from its series (engines/sim/spec_decode.py).
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_POSITION = re.compile(r'position="(\d+)"')


@dataclass(frozen=True)
class ScrapeParseError(ValueError):
    line: int
    text: str

    def __str__(self) -> str:
        return f"metrics line {self.line}: not a Prometheus sample: {self.text[:80]!r}"


def parse_prometheus(text: str) -> dict[str, float]:
    """`{metric name: value summed over its label sets}` of Prometheus text format 0.0.4 (comments skipped)."""
    totals: dict[str, float] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        brace, per_position = line.find("{"), None
        if brace >= 0:
            close = line.rfind("}")
            if close < brace:
                raise ScrapeParseError(number, raw)
            name, rest = line[:brace], line[close + 1 :].split()
            if name == PER_POSITION and (position := _POSITION.search(line[brace:close])) is not None:
                per_position = f"{name}[{int(position.group(1))}]"  # summed over the other labels only
        else:
            name, *rest = line.split()
        if not rest:
            raise ScrapeParseError(number, raw)
        try:
            value = float(rest[0])  # a trailing timestamp, if any, is ignored
        except ValueError:
            raise ScrapeParseError(number, raw) from None
        if math.isnan(value):
            continue
        totals[name] = totals.get(name, 0.0) + value
        if per_position is not None:
            totals[per_position] = totals.get(per_position, 0.0) + value
    return totals


def server_fields(samples: dict[str, float]) -> dict[str, float | list[float]]:
    """The fields of `NAMES` the samples hold, by the first name of each that is present, and
    `spec_accepted_per_pos` (position 0 first) when the server counts acceptance per draft position."""
    fields: dict[str, float | list[float]] = {}
    for field, names in NAMES.items():
        for name in names:
            if name in samples:
                fields[field] = samples[name]
                break
    per_pos = []
    while (value := samples.get(f"{PER_POSITION}[{len(per_pos)}]")) is not None:
        per_pos.append(value)
    if per_pos:
        fields["spec_accepted_per_pos"] = per_pos
    return fields


def spec_decode(start: dict[str, float], end: dict[str, float]) -> dict[str, float] | None:
    """Acceptance over a window from counter deltas (vLLM's definitions, docs/metrics.md), None if not exposed.

    acceptance rate = accepted tokens / draft tokens; mean acceptance length = 1 + accepted tokens / drafts.
    A draft is what vLLM counts as one (`vllm:spec_decode_num_drafts`): a request's verify step that scheduled
    draft tokens, so a window can hold drafts of no draft token (async scheduling's unfilled placeholders):
    its length is then 1 and its rate None (harness/metrics/spec_decode.py cites vLLM's source).
    """
    keys = ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")
    if not all(k in start and k in end for k in keys):
        return None
    drafts, draft_tokens, accepted = (end[k] - start[k] for k in keys)
    if drafts <= 0:
        return None  # no drafts in the window: no acceptance to report
    return {
        "drafts": drafts,
        "draft_tokens": draft_tokens,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / draft_tokens if draft_tokens > 0 else None,
        "mean_acceptance_length": 1 + accepted / drafts,
    }
