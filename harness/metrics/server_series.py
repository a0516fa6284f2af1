"""What a scraped server series (`server/<engine>-t<trial>.jsonl`, docs/run-directory.md) says of a trial.

Counters are read as deltas between the first and the last successful sample of the trial (a server's counters
run from its start, not the trial's); when the scrape failed at the trial's start or end, those deltas cover only
`counted_s` of it, and `partial` says so. A field the server never exposed is absent or None, never 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from engines.http.scrape_names import spec_decode


def _ok(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("ok")]


def _delta(first: dict[str, Any], last: dict[str, Any], key: str) -> float | None:
    return last[key] - first[key] if key in first and key in last else None


def server_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """metrics.json's `server`: samples and gaps, peaks of the gauges, the server-counted prefix hit rate and
    spec-decode acceptance over the trial."""
    ok = _ok(rows)
    out: dict[str, Any] = {"samples": len(ok), "gaps": len(rows) - len(ok)}
    if not ok:
        return out
    first, last = ok[0], ok[-1]
    # the scraper samples once before the first request and once after the last: a gap at either end means
    # the counter deltas below miss part of the trial (a scrape that died mid-run), which must be said
    out["counted_s"] = [first["t"], last["t"]]
    out["partial"] = not (rows[0].get("ok") and rows[-1].get("ok"))
    for key in ("running", "waiting", "kv_usage"):
        values = [r[key] for r in ok if key in r]
        out[f"{key}_peak"] = max(values) if values else None
    out["preemptions"] = _delta(first, last, "preemptions")
    hits, queries = _delta(first, last, "prefix_hits"), _delta(first, last, "prefix_queries")
    out["prefix_cache"] = (
        {"hit_rate": hits / queries, "hit_tokens": hits, "query_tokens": queries}
        if hits is not None and queries
        else None
    )
    out["spec_decode"] = spec_decode(first, last)
    return out


def as_step_frame(rows: list[dict[str, Any]]) -> pd.DataFrame | None:
    """The series in the step trace's columns that the early warnings read (`waiting`, KV use as blocks of a
    pool of 1, preemptions since the last sample), so HTTP targets get the engine-view signals too. None when
    the server exposed neither a queue nor KV use."""
    ok = [r for r in _ok(rows) if "waiting" in r or "kv_usage" in r]
    if not ok:
        return None
    preempt = np.array([r.get("preemptions", np.nan) for r in ok], dtype=np.float64)
    new = np.diff(preempt, prepend=preempt[0]) if preempt.size else preempt
    new = np.where(np.isfinite(new), np.maximum(new, 0), 0).astype(int)
    t = [float(r["t"]) for r in ok]
    return pd.DataFrame(
        {
            "t_start": t,
            "t_end": t,
            "waiting": [r.get("waiting", np.nan) for r in ok],
            "kv_blocks_used": [r.get("kv_usage", np.nan) for r in ok],
            "kv_blocks_total": [1.0 if "kv_usage" in r else 0.0 for r in ok],
            "preempted": [[None] * n for n in new],
        }
    )
