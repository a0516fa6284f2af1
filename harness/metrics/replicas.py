"""Which replica answered each request, counted: per-replica requests and the imbalance (max over mean). A
simulated cluster's router records its choice (`replica`, 0..n-1); a real fleet's servers name themselves
(`replica_id`: `batchmark serve --replica-id`, the x-batchmark-replica header the HTTP engine records), so a run
through a real router reports what the simulated one does. None when no record names a replica."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def _names(records: pd.DataFrame) -> tuple[list[str | None], str] | None:
    """Each record's replica as a name, and who named them ("server" or "router"); None when no record does."""
    for column, named_by in (("replica_id", "server"), ("replica", "router")):
        if column not in records or records[column].isna().all():  # no name in it (most runs): not read one by one
            continue
        # a router's index reads back as a float in a column with gaps (NaN): its name is the integer (the
        # column as a list, as `harness.metrics.compare.paired_deltas` reads its ids)
        names = [
            None
            if v is None or (isinstance(v, float) and math.isnan(v)) or v == ""
            else str(int(v))
            if isinstance(v, float)
            else str(v)
            for v in records[column].tolist()
        ]
        if any(n is not None for n in names):
            return names, named_by
    return None


def replica_summary(records: pd.DataFrame) -> dict[str, Any] | None:
    """`summary.replicas`: `named_by` ("server": names servers returned; "router": a simulated cluster's indices,
    also in its CLUSTER line), `requests_per_replica` (name -> requests it answered, failed ones included),
    `imbalance_max_over_mean` over the replicas seen (one that answered nothing is unseen by the client) and
    `unattributed`: requests no replica named (refused before a response, or a server that does not say)."""
    found = _names(records)
    if found is None:
        return None
    names, named_by = found
    counts: dict[str, int] = {}
    for name in names:
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    mean = sum(counts.values()) / len(counts)
    return {
        "named_by": named_by,
        "requests_per_replica": dict(sorted(counts.items())),
        "imbalance_max_over_mean": max(counts.values()) / mean,
        "unattributed": sum(name is None for name in names),
    }


def describe_replicas(engine: str, replicas: dict[str, Any]) -> str:
    """The console's line for one engine's replicas."""
    per = ", ".join(f"{name} {n}" for name, n in replicas["requests_per_replica"].items())
    line = f"{engine}: requests per replica: {per} (imbalance max/mean {replicas['imbalance_max_over_mean']:.2f})"
    unattributed = replicas["unattributed"]
    return line + (f"; {unattributed} answered by no named replica" if unattributed else "")
