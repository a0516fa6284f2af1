"""Prefix-cache hit rates: measured from the records, predicted from the prompts the workload sends.

Measured: prompt tokens the engine reports it took from its cache (`RequestRecord.cached_tokens`: the
in-process engine's own count, a server's `usage.prompt_tokens_details.cached_tokens`) over the prompt
tokens of the requests that reported it. None when no request reported it: no data is not a 0% hit rate.

Predicted: what an unbounded cache of full `block_size`-token blocks would reuse if every request found
every block of every earlier request (in schedule order) already computed: per request, its leading full
blocks that some earlier prompt also has, never the block holding its last token (that token is always
computed, as engines do). The blocks are named as the engines name them (`engines.block_manager.block_hash`),
so the prediction counts what the trace's hashes (Mooncake `hash_ids`, a session's history) make shareable.
Measured falls short of it when requests that share a prefix are in flight at once (the prefix is not yet
computed when the second is admitted), when blocks are evicted, or when an engine does not cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engines.block_manager import block_hash


def measured_hit_rate(records: pd.DataFrame) -> dict[str, Any] | None:
    """`{"hit_rate", "cached_tokens", "prompt_tokens", "requests"}` over requests that report cached tokens."""
    if "cached_tokens" not in records:
        return None
    known = records[records["cached_tokens"].notna()]
    if known.empty:
        return None
    prompt = int(known["prompt_tokens"].sum())
    cached = int(known["cached_tokens"].sum())
    return {
        "hit_rate": cached / prompt if prompt else None,
        "cached_tokens": cached,
        "prompt_tokens": prompt,
        "requests": len(known),
    }


def predicted_hit_rate(prompts: Iterable[Sequence[int]], block_size: int) -> dict[str, Any]:
    """`{"hit_rate", "reusable_tokens", "prompt_tokens", "block_size"}` of an unbounded cache (above)."""
    seen: set[int] = set()
    reusable = total = 0
    for prompt in prompts:
        n = len(prompt)
        total += n
        parent: int | None = None
        chain: list[int] = []
        for i in range(n // block_size):
            parent = block_hash(parent, prompt[i * block_size : (i + 1) * block_size])
            chain.append(parent)
        limit = (n - 1) // block_size
        hits = 0
        while hits < limit and chain[hits] in seen:
            hits += 1
        reusable += hits * block_size
        seen.update(chain)
    return {
        "hit_rate": reusable / total if total else None,
        "reusable_tokens": reusable,
        "prompt_tokens": total,
        "block_size": block_size,
    }


def hit_rate_said(summary: dict[str, Any]) -> str:
    """An engine's measured hit rate, in words: its own count (in process, simulated: it has a step trace);
    for a server its scraped counters, which count every admission (a response's cached tokens count its first
    admission only). A figure nobody gave is n/a with the reason, never 0.0%."""
    measured, server = summary.get("prefix_cache"), summary.get("server")
    served = (server or {}).get("prefix_cache")
    if served is not None:
        hits, queries = served["hit_tokens"], served["query_tokens"]
        said = f"{served['hit_rate']:.1%} (server counters: {hits:.0f} of {queries:.0f} prompt tokens)"
        if server.get("partial"):
            start, end = server["counted_s"]
            said += f" (only {start:.1f}-{end:.1f} s of the trial: the scrape failed outside it)"
        return said
    reported = measured is not None and measured["hit_rate"] is not None
    if summary.get("utilisation") is not None and reported:
        return f"{measured['hit_rate']:.1%}"
    if server is None:
        why = "no scrape of the server"
    elif not server.get("samples"):
        why = f"every one of the {server.get('gaps', 0)} scrapes of the server failed"
    elif (unknown := (server.get("unknown") or {}).get("prefix_cache")) is not None:
        why = unknown  # harness.metrics.server_series: counters that went backwards, a router's URL
    else:
        why = "the scrape exposed no prefix-cache counters"
    if reported:
        why += f"; responses reported {measured['hit_rate']:.1%} cached at first admission"
    return f"n/a ({why})"


def predicted_said(predicted: dict[str, Any] | None) -> str | None:
    """metrics.json's `prefix_cache_predicted` in words, at 16-token blocks (vLLM's) when predicted there."""
    if not predicted:
        return None
    best = predicted.get("16") or predicted[str(next(iter(predicted)))]
    rate = "n/a (no prompt tokens)" if best["hit_rate"] is None else f"{best['hit_rate']:.1%}"
    return f"{rate} at {best['block_size']}-token blocks"


@dataclass(frozen=True)
class PrefixCacheView:
    """What a run says about its prefix cache and its turns, per engine: the console prints it, the report and
    the Markdown summary render it. `turns`: metrics.json's `sessions.ttft_by_turn` (None: no sessions)."""

    engine: str
    measured: str
    predicted: str | None
    turns: list[dict[str, Any]] | None


def prefix_cache_views(summaries: dict[str, dict[str, Any]], predicted: dict[str, Any] | None) -> list[PrefixCacheView]:
    """One view per engine that has anything to say (a measured or predicted hit rate, or turns)."""
    views = []
    for engine, summary in summaries.items():
        server = summary.get("server") or {}
        served = server.get("prefix_cache") or (server.get("unknown") or {}).get("prefix_cache")
        turns = (summary.get("sessions") or {}).get("ttft_by_turn") or None
        if summary.get("prefix_cache") is None and served is None and not predicted and not turns:
            continue
        views.append(PrefixCacheView(engine, hit_rate_said(summary), predicted_said(predicted), turns))
    return views
