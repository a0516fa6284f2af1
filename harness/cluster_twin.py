"""The simulated twin of a run against a real router: N replicas of a fitted profile behind the same policy.

An HTTP engine whose manifest entry names its fleet (`router=`, `replicas=`: engines/fleet_names.py) measured
a router over `batchmark serve` replicas. Its twin is `cluster:replicas=N,router=P,replica=sim:...` on one
virtual clock (engines/sim/cluster.py): every replica is the continuous scheduler with `batchmark serve`'s own
defaults (the "serve" option profile, which the replicas ran without scheduler flags), on the profile's step
times and KV pool, and the router is batchmark's policy of the same name. What the twin cannot know: the
real router's own latency, its load polls (vllm-router's power_of_two reads /get_load every 5 s and adds its
in-flight count), and the replicas' contention for the machine's cores; `sim fidelity` measures the sum.
Two of those can be measured on a separate calibration run and given to the twin (`sim fidelity --serving
FILE`, harness/serving_path.py): the serving path every request takes (`path_ms` of the cluster) and the
replicas' contention (`slowdown` of every replica's steps).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.fleet_names import TWIN_POLICY
from engines.options import defaults
from engines.sim.fitted import load_profile
from harness.errors import HarnessInputError

if TYPE_CHECKING:  # harness.serving_path reads traces with harness.simulation, which builds this module's twins
    from harness.serving_path import ServingPath

IN_PROCESS_KINDS = ("static", "continuous")


def fleet(engine: Mapping[str, Any]) -> tuple[str, int] | None:
    """(router policy, replicas) of an HTTP engine that named its fleet; None for any other engine."""
    options = engine.get("options") or {}
    if engine.get("kind") != "http" or not options.get("router") or not options.get("replicas"):
        return None
    return str(options["router"]), int(options["replicas"])


def has_twin(engine: Mapping[str, Any]) -> bool:
    """An in-process engine, or a router over replicas: what `sim fidelity` can simulate."""
    return engine.get("kind") in IN_PROCESS_KINDS or fleet(engine) is not None


def replica_description(profile: Path) -> dict[str, Any]:
    """A manifest-style description of one `batchmark serve` replica on the profile's model and KV pool."""
    fitted = load_profile(profile).engine
    serve = defaults("continuous", "serve")
    return {
        "name": "replica",
        "kind": "continuous",
        "kv_blocks": fitted.get("kv_blocks"),
        "options": {
            "policy": serve["policy"],
            "kv": {"block_size": fitted.get("block_size") or serve["block_size"]},
            "continuous": {k: serve.get(k) for k in ("max_running", "max_batched_tokens", "chunked_prefill")},
        },
    }


def cluster_twin_spec(
    engine: Mapping[str, Any], label: str, seed: int, replica: str, serving: ServingPath | None = None
) -> str:
    """The `--engine cluster:...` spec of the fleet `engine` measured, each replica `replica` (a sim spec);
    `serving` adds its measured path to every request and its contention to every replica's steps."""
    named = fleet(engine)
    if named is None:
        raise HarnessInputError(f"engine {engine.get('name')!r}: not a router over replicas (http: router=, replicas=)")
    policy, replicas = named
    twin_policy = TWIN_POLICY.get(policy)
    if twin_policy is None:
        raise HarnessInputError(
            f"engine {engine.get('name')!r}: router policy {policy!r} has no simulated "
            "counterpart (engines/fleet_names.py), so the run has no twin"
        )
    path = ""
    if serving is not None:
        path = f"path_ms={serving.path_ms},"
        replica = f"{replica},slowdown={serving.slowdown}"  # replica= takes the rest of the spec
    return f"cluster:replicas={replicas},router={twin_policy},seed={seed},{path}label={label},replica={replica}"
