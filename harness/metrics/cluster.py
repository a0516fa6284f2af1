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
    return (
        f"{len(counts)} replicas behind a {router.get('policy')} router (load counted in {router.get('load')}): "
        f"requests per replica {counts}, {spread}, {cache}; decisions: {decisions}"
    )


def disagg_text(engine: dict[str, Any]) -> str | None:
    """One line for a P/D disaggregated engine: pools, link, and the mean TTFT split; None for any other."""
    d = engine.get("disagg")
    if engine.get("kind") != "disagg" or not isinstance(d, dict):
        return None
    bw = d.get("bandwidth_bytes_per_s")
    link = f"{d.get('link')} link at {bw / 1e9:.1f} GB/s" if bw else "an instantaneous link"
    split = d.get("mean_ttft_split_s") or {}
    if all(v is not None for v in split.values()) and split:
        parts = ", ".join(f"{k.replace('_', ' ')} {v * 1e3:.1f} ms" for k, v in split.items())
    else:
        parts = "n/a (no request got a first token)"
    latency_us = d.get("latency_s", 0) * 1e6
    return (
        f"{d.get('prefill')} prefill + {d.get('decode')} decode replicas, {link} + {latency_us:.0f} us, "
        f"{d.get('transferred_bytes', 0) / 1e9:.2f} GB of KV moved; mean TTFT split: {parts}"
    )
