"""A simulated cluster's router, in words: per-replica load, imbalance and why each request went where it did.

Read from the engine description a cluster writes into the manifest (`engines.sim.cluster`); the records'
`replica` field says the same per request.
"""

from __future__ import annotations

from typing import Any


def router_text(engine: dict[str, Any]) -> str | None:
    """One line for a cluster engine; None for any other engine."""
    router = engine.get("router")
    if engine.get("kind") != "cluster" or not isinstance(router, dict):
        return None
    counts = router.get("requests_per_replica") or []
    imbalance = router.get("imbalance_max_over_mean")
    spread = f"imbalance max/mean {imbalance:.2f}" if imbalance is not None else "imbalance n/a (no request served)"
    hit = router.get("prefix_hit_rate")
    cache = f"prefix cache hit rate {hit:.1%}" if hit is not None else "prefix cache hit rate n/a (no prompt finished)"
    decisions = ", ".join(f"{k} {v}" for k, v in (router.get("decisions") or {}).items()) or "none"
    return (f"{len(counts)} replicas behind a {router.get('policy')} router (load counted in {router.get('load')}): "
            f"requests per replica {counts}, {spread}, {cache}; decisions: {decisions}")  # fmt: skip
