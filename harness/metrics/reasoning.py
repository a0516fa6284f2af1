"""Reasoning tokens: the two output channels of a reasoning model, from `RequestRecord.token_channels`.

A reasoning model streams its thinking first (vLLM's `delta.reasoning_content`, newer `delta.reasoning`, or
text inside `<think>...</think>`) and its answer after. The first token is then not the first thing a user
reads: TTFT times the first reasoning token, TTFO (time to first output, the first *content* token) the answer
(guidellm#737, aiperf#359 and vllm#42548 ask for the split; docs/metrics.md).

Per request, r = reasoning tokens ("r" in `token_channels`), c = content tokens (the rest of `output_tokens`;
an empty `token_channels` means every token is content, so old runs read as r = 0). Latencies are over
successful requests (`latency.succeeded`), as `ttft_sent` and `tpot` are. Per-channel TPOT is measured between
token times: there is no finish event between the two channels, so it cannot end at `t_finish` as `tpot` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.latency import succeeded
from harness.metrics.stats import describe


def _spans(records: pd.DataFrame, channel: str) -> pd.DataFrame:
    """Per request, the channel's token count and the times of its first and last token (NaN when it has none)."""
    size = len(records)
    count = np.zeros(size, dtype=np.int64)
    first_at, last_at = np.full(size, np.nan), np.full(size, np.nan)
    for i, (letters, times) in enumerate(zip(records["token_channels"], records["token_times"], strict=True)):
        if not letters:  # every token is content
            if channel != "r" and (n := len(times)):
                count[i], first_at[i], last_at[i] = n, times[0], times[-1]
            continue
        first = letters.find(channel)
        if first >= 0:
            count[i], first_at[i], last_at[i] = letters.count(channel), times[first], times[letters.rfind(channel)]
    # filled in place and framed once: a frame of row tuples, then retyped, cost 30x the loop (the gate
    # computes TTFO for every run it judges)
    return pd.DataFrame({"n": count, "first": first_at, "last": last_at}, index=records.index)


def reasoning_tokens(records: pd.DataFrame) -> pd.Series:
    """Reasoning tokens per request: r = the number of "r" in `token_channels` (0 when it is empty)."""
    return records["token_channels"].str.count("r").astype("int64")


def content_tokens(records: pd.DataFrame) -> pd.Series:
    """Content (answer) tokens per request: c = `output_tokens` - r."""
    return (records["output_tokens"] - reasoning_tokens(records)).astype("int64")


def ttfo(records: pd.DataFrame) -> pd.Series:
    """Time to first output (content) token: TTFO = t(first "c" token) - `t_scheduled`; the same as TTFT for a
    request without reasoning; NaN for a request that failed or produced no content token (`reasoning_exhausted`)."""
    first = _spans(records, "c")["first"]
    return (first - records["t_scheduled"]).where(succeeded(records))


def tpot_reasoning(records: pd.DataFrame) -> pd.Series:
    """Time per reasoning token: (t(last "r") - t(first "r")) / (r - 1); NaN for r < 2 or a failed request."""
    s = _spans(records, "r")
    return ((s["last"] - s["first"]) / (s["n"] - 1).where(s["n"] >= 2)).where(succeeded(records))


def tpot_content(records: pd.DataFrame) -> pd.Series:
    """Time per content token: (t(last "c") - t(first "c")) / (c - 1); NaN for c < 2 or a failed request."""
    s = _spans(records, "c")
    return ((s["last"] - s["first"]) / (s["n"] - 1).where(s["n"] >= 2)).where(succeeded(records))


def reasoning_exhausted(records: pd.DataFrame) -> pd.Series:
    """True for a request whose `max_tokens` was spent in reasoning: it finished at its length
    (finish_reason "length", no error) with r > 0 and c = 0, so it never gave an answer."""
    at_length = (records["finish_reason"] == "length") & records["error_type"].isna()
    return at_length & (reasoning_tokens(records) > 0) & (content_tokens(records) == 0)


def reasoning_summary(records: pd.DataFrame, **stats_kw: Any) -> dict[str, Any] | None:
    """The summary's `reasoning` block; None when no request had a reasoning token (no reasoning channel seen).
    `stats_kw` go to `stats.describe` (percentiles, bootstrap)."""
    r = reasoning_tokens(records)
    if not (r > 0).any():
        return None
    exhausted = reasoning_exhausted(records)
    return {
        "requests_with_reasoning": int((r > 0).sum()),
        "reasoning_tokens": int(r.sum()),
        "content_tokens": int(content_tokens(records).sum()),
        "exhausted": int(exhausted.sum()),
        "exhausted_ids": records.loc[exhausted, "request_id"].head(10).tolist(),
        "ttfo": describe(ttfo(records), **stats_kw),
        "tpot_reasoning": describe(tpot_reasoning(records), **stats_kw),
        "tpot_content": describe(tpot_content(records), **stats_kw),
    }
