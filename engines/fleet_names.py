"""The router policies an HTTP engine's `router=` may name, and the simulated router each maps to.

The names are those the real routers take (vllm-router 0.1.17's `--policy`, sglang-router's) plus batchmark's own
(engines/sim/router.py). A run against a router records the name as given; `sim fidelity` builds the cluster
twin with the mapped policy. None: batchmark has no simulated router that decides the same way, so the run
has no twin (said by name rather than approximated).
"""

from __future__ import annotations

TWIN_POLICY: dict[str, str | None] = {
    "round_robin": "round_robin",
    "random": "random",
    "power_of_two": "power_of_two",
    "cache_aware": "cache_aware",
    "least_outstanding": "least_outstanding",
    "least_loaded": "least_outstanding",
    "session_sticky": "session_sticky",
    # vllm-router's: a request with a session key stays with its worker, a new one goes to the least loaded
    "sticky_least_loaded": "session_sticky",
    "consistent_hash": None,  # a hash ring over a request key: no simulated counterpart
    "kv_aware": None,  # reads the workers' KV events: no simulated counterpart
}
ROUTER_NAMES = tuple(TWIN_POLICY)
