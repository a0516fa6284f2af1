"""What a scraped server series (`server/<engine>-t<trial>.jsonl`, docs/run-directory.md) says of a trial.

Counters are read as deltas between the first and the last successful sample of the trial (a server's counters
run from its start, not the trial's); when the scrape failed at the trial's start or end, those deltas cover only
`counted_s` of it, and `partial` says so. A field the server never exposed is absent or None, never 0.

A figure the series cannot know is None with the reason in `unknown` (figure -> reason), said the same way by
every reader (console, summary.md, report.html): a counter that went backwards between two samples (a restart, or
another server answering) leaves every counter delta unknown; a series scraped at a router's URL (rows carrying
`router_replicas`, harness/server_scrape.py) mixes its replicas' samples, so no per-server figure is known.

A fleet scraped replica by replica (`scrape=URL|URL`: rows carrying `replica` and `tick`) is each replica's own
series: `replicas` holds each one's summary as above, and the fleet's figures are theirs combined. Counters: the
sum over replicas of each replica's delta (its first to its last successful sample), unknown when any replica's
is (its counters went backwards, or it never answered), the reason naming the replica. Gauges, tick by tick
over the ticks at which every replica answered: requests running and queued summed, the KV share averaged (the
replicas' pools taken as equal, as `batchmark serve` replicas of one model are).
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engines.http.scrape_names import spec_decode
from harness.metrics.frame import read_numbered
from harness.records import RecordError


def _ok(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("ok")]


# metrics.json's figure -> the series fields it is derived from; the counters are the `_total` ones
FIGURES: dict[str, tuple[str, ...]] = {
    "running_peak": ("running",),
    "waiting_peak": ("waiting",),
    "kv_usage_peak": ("kv_usage",),
    "preemptions": ("preemptions",),
    "prefix_cache": ("prefix_hits", "prefix_queries"),
    "spec_decode": ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens"),
}
COUNTER_FIGURES = ("preemptions", "prefix_cache", "spec_decode")
WENT_BACKWARDS = "the server's counters went backwards between scrapes: restarted, or a different server answered"


def behind_router(replicas: int) -> str:
    return f"a router's URL: each scrape reaches one replica of {replicas}"


def _went_backwards(ok: list[dict[str, Any]]) -> bool:
    counters = {key for figure in COUNTER_FIGURES for key in FIGURES[figure]}
    return any(
        key in before and key in after and after[key] < before[key]
        for before, after in pairwise(ok)
        for key in counters
    )


def _unknown(ok: list[dict[str, Any]]) -> dict[str, str]:
    """figure -> why the series cannot know it, for the figures whose fields the server exposed."""
    replicas = ok[0].get("router_replicas")
    if replicas is not None:
        why, figures = behind_router(int(replicas)), tuple(FIGURES)
    elif _went_backwards(ok):
        why, figures = WENT_BACKWARDS, COUNTER_FIGURES
    else:
        return {}
    return {f: why for f in figures if any(all(k in r for k in FIGURES[f]) for r in ok)}


def _delta(first: dict[str, Any], last: dict[str, Any], key: str) -> float | None:
    return last[key] - first[key] if key in first and key in last else None


def replica_labels(rows: list[dict[str, Any]]) -> list[str]:
    """The replicas a fleet's series names, in order of first appearance; [] for one server's series."""
    return list(dict.fromkeys(str(r["replica"]) for r in rows if r.get("replica") is not None))


def server_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """metrics.json's `server`: samples and gaps, peaks of the gauges, the server-counted prefix hit rate and
    spec-decode acceptance over the trial; for a fleet scraped replica by replica, the fleet's (module
    docstring) and `replicas`, each replica's own."""
    labels = replica_labels(rows)
    if labels:
        return _fleet_summary(rows, labels)
    return _server_summary(rows)


def _server_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = _ok(rows)
    out: dict[str, Any] = {"samples": len(ok), "gaps": len(rows) - len(ok)}
    if not ok:
        return out
    first, last = ok[0], ok[-1]
    # the scraper samples once before the first request and once after the last: a gap at either end means
    # the counter deltas below miss part of the trial (a scrape that died mid-run), which must be said
    out["counted_s"] = [first["t"], last["t"]]
    out["partial"] = not (rows[0].get("ok") and rows[-1].get("ok"))
    out.update(_figures(ok, first, last))
    out["unknown"] = _unknown(ok)
    for figure in out["unknown"]:
        out[figure] = None
    return out


_SUMMED = ("running", "waiting", "preemptions")  # a fleet's gauges and counters tick by tick: the replicas' sum


def _fleet_ticks(rows: list[dict[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    """One row per tick at which every replica answered: running, queued and preempted summed, the KV share
    averaged (a field only where every replica exposed it), at the tick's first sample time."""
    ticks: dict[Any, dict[str, dict[str, Any]]] = {}
    seen: dict[str, int] = {}
    for r in rows:
        label = str(r.get("replica"))
        tick = r.get("tick", seen.get(label, 0))  # hand-written rows without ticks: each replica's n-th sample
        seen[label] = seen.get(label, 0) + 1
        ticks.setdefault(tick, {})[label] = r
    out = []
    for tick in sorted(ticks, key=lambda k: min(float(r["t"]) for r in ticks[k].values())):
        samples = ticks[tick]
        if set(samples) != set(labels) or not all(r.get("ok") for r in samples.values()):
            continue
        row: dict[str, Any] = {"t": min(float(r["t"]) for r in samples.values()), "ok": True}
        for key in _SUMMED:
            if all(key in r for r in samples.values()):
                row[key] = sum(float(r[key]) for r in samples.values())
        if all("kv_usage" in r for r in samples.values()):
            row["kv_usage"] = sum(float(r["kv_usage"]) for r in samples.values()) / len(samples)
        out.append(row)
    return out


def _fleet_summary(rows: list[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    per = {label: _server_summary([r for r in rows if str(r.get("replica")) == label]) for label in labels}
    ok = _ok(rows)
    out: dict[str, Any] = {"samples": len(ok), "gaps": len(rows) - len(ok), "replicas": per}
    if not ok:
        return out
    firsts, lasts = [], []
    unknown: dict[str, str] = {}
    for label in labels:
        mine = _ok([r for r in rows if str(r.get("replica")) == label])
        if not mine:
            unknown.update(dict.fromkeys(FIGURES, f"replica {label}: no scrape of it succeeded"))
            continue
        firsts.append(mine[0])
        lasts.append(mine[-1])
        for figure, why in per[label]["unknown"].items():
            unknown.setdefault(figure, f"replica {label}: {why}")
    out["counted_s"] = [min(r["t"] for r in firsts), max(r["t"] for r in lasts)] if firsts else None
    out["partial"] = any(s.get("partial", True) for s in per.values())
    out.update(_figures(_fleet_ticks(rows, labels), _summed(firsts), _summed(lasts)))
    # as for one server: only the figures whose fields some replica exposed
    out["unknown"] = {f: why for f, why in unknown.items() if any(all(k in r for k in FIGURES[f]) for r in ok)}
    for figure in out["unknown"]:
        out[figure] = None
    return out


def _summed(samples: list[dict[str, Any]]) -> dict[str, float]:
    """The counters every one of `samples` holds, summed: a fleet's counter at the replicas' first (or last)
    samples, whose difference is the sum of their deltas."""
    counters = {key for figure in COUNTER_FIGURES for key in FIGURES[figure]}
    common = [k for k in counters if samples and all(k in s for s in samples)]
    return {k: sum(float(s[k]) for s in samples) for k in common}


def as_step_frame(rows: list[dict[str, Any]]) -> pd.DataFrame | None:
    """The series in the step trace's columns that the early warnings read (`waiting`, KV use as blocks of a
    pool of 1, preemptions since the last sample), so HTTP targets get the engine-view signals too. None when
    the server exposed neither a queue nor KV use, or the series came through a router (its replicas mixed).
    A fleet scraped replica by replica reads as its ticks summed (`_fleet_ticks`)."""
    if labels := replica_labels(rows):
        rows = _fleet_ticks(rows, labels)
    ok = [r for r in _ok(rows) if "waiting" in r or "kv_usage" in r]
    if ok and ok[0].get("router_replicas") is not None:
        return None
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


def read_series(path: Path) -> list[dict[str, Any]]:
    """The rows of a server series, read as records are: a bad line, or a sample without its time (which
    every reader places it by), is one error naming the line."""
    rows, lines, _ = read_numbered(path)
    for row, line in zip(rows, lines, strict=True):
        t = row.get("t")
        if isinstance(t, bool) or not isinstance(t, int | float):
            raise RecordError(f"{path}:{line}: t: expected seconds (a number), found {t!r}")
    return rows


def _figures(samples: list[dict[str, Any]], first: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """The peaks over `samples` and the counters' changes from `first` to `last` (one server, or a fleet's sums)."""
    out: dict[str, Any] = {}
    for key in ("running", "waiting", "kv_usage"):
        values = [r[key] for r in samples if key in r]
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
