"""Speculative-decoding acceptance from the per-request counts in the records (`spec_drafts`, `spec_draft_tokens`,
`spec_accepted_tokens`): what the engine counted for each request, where it said (the simulator's spec decode;
vLLM with `--per-request-spec-decode-metrics`). vLLM's definitions, as the scrape's counter deltas
(`engines.http.scrape_names.spec_decode`): acceptance rate = accepted / draft tokens; mean acceptance length =
1 + accepted / drafts (the tokens one verify step emits). None when no record carries counts: no figure is
made up for a run whose engine did not say.

What vLLM counts as a draft (checked in vLLM's source, vllm-project/vllm at commit
00024d314514900f361ad072af6931e403b7f589): `Scheduler.update_from_output` (vllm/v1/core/sched/scheduler.py) calls
`make_spec_decoding_stats` for a request only when that step scheduled draft tokens for it and it produced output
(`if scheduled_spec_token_ids and generated_token_ids`), and `SpecDecodingStats.observe_draft`
(vllm/v1/spec_decode/metrics.py) adds one draft per such call. A decode step whose proposer offered nothing (an
n-gram miss under synchronous scheduling leaves the request no draft tokens to schedule) is not a draft: drafts
are verify steps, not decode steps. Under asynchronous scheduling the step schedules placeholders before the
proposal is known; those the proposer leaves unfilled are subtracted from the draft tokens after the zero check,
so such a step is a draft of no draft token (drafts + 1, draft tokens + 0). Hence the two denominators differ:
the length is over drafts (a request with drafts but no draft token has length 1, as vLLM's
`compute_acceptance_len` gives), the rate over draft tokens (None without any).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

_COLUMNS = ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")


def _spread(values: np.ndarray) -> dict[str, float | int]:
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return {
        "n": int(values.size),
        "mean": float(values.mean()),
        "p10": float(p10),
        "p50": float(p50),
        "p90": float(p90),
    }


def spec_decode_summary(records: pd.DataFrame) -> dict[str, Any] | None:
    """`summary.spec_decode`: the trial's totals and acceptance (`drafts`, `draft_tokens`, `accepted_tokens`,
    `acceptance_rate`, `mean_acceptance_length`, over the requests with counts) and `per_request`: each figure's
    spread (n, mean, p10, p50, p90) over the requests that drafted at least once. None without counts."""
    if not all(c in records for c in _COLUMNS):
        return None
    counted = records.dropna(subset=list(_COLUMNS))
    if counted.empty:
        return None
    drafts, drafted, accepted = (counted[c].to_numpy(dtype=np.float64) for c in _COLUMNS)
    total_drafts, total_drafted, total_accepted = drafts.sum(), drafted.sum(), accepted.sum()
    out: dict[str, Any] = {
        "requests": len(counted),
        "drafts": int(total_drafts),
        "draft_tokens": int(total_drafted),
        "accepted_tokens": int(total_accepted),
        "acceptance_rate": float(total_accepted / total_drafted) if total_drafted > 0 else None,
        "mean_acceptance_length": float(1 + total_accepted / total_drafts) if total_drafts > 0 else None,
        "per_request": None,
    }
    verified, drafting = drafts > 0, drafted > 0  # the length's denominator, the rate's (module docstring)
    if verified.any():
        out["per_request"] = {
            "acceptance_rate": _spread(accepted[drafting] / drafted[drafting]) if drafting.any() else None,
            "mean_acceptance_length": _spread(1 + accepted[verified] / drafts[verified]),
        }
    return out


def describe_spec_decode(engine: str, summary: dict[str, Any]) -> str | None:
    """The console's line for one engine's speculative decoding: per trial and per request from the records'
    counts, else per trial only from the scrape's counters (saying so); None when neither says anything."""
    mine, server = summary.get("spec_decode"), (summary.get("server") or {}).get("spec_decode")
    row = mine or server
    unknown = ((summary.get("server") or {}).get("unknown") or {}).get("spec_decode")
    if row is None and unknown is not None:  # the server counts drafts, but its deltas are not knowable
        return f"{engine}: speculative decoding: n/a ({unknown})"
    if row is None or row.get("mean_acceptance_length") is None:
        return None
    rate_text = "n/a (no draft token)" if row["acceptance_rate"] is None else f"{row['acceptance_rate']:.1%}"
    line = (
        f"{engine}: speculative decoding: acceptance rate {rate_text}, mean acceptance length "
        f"{row['mean_acceptance_length']:.2f} ({row['drafts']:.0f} drafts, {row['accepted_tokens']:.0f} of "
        f"{row['draft_tokens']:.0f} draft tokens accepted)"
    )
    per = (mine or {}).get("per_request")
    if per:
        rate, length = per["acceptance_rate"], per["mean_acceptance_length"]
        rates = "rate n/a" if rate is None else f"rate {rate['p10']:.0%}/{rate['p50']:.0%}/{rate['p90']:.0%}"
        if rate is not None and rate["n"] != length["n"]:
            rates += f" (the {rate['n']} with draft tokens)"
        return line + (
            f"; per request ({length['n']}) p10/p50/p90 {rates}, "
            f"length {length['p10']:.2f}/{length['p50']:.2f}/{length['p90']:.2f}"
        )
    return line + ("; per trial only (server counters: the server returned no per-request counts)" if not mine else "")
