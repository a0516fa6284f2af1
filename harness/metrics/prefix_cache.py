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
