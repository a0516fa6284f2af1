"""A variant changes one assumption of the baseline engine or workload, expressed in the existing tables.

A change is one key: of a simulated fleet (`cluster:` or `disagg:` baseline), one of its own keys (router,
replicas, load, prefill, decode, link, ...; a P:D ratio is two changes, `base` chaining them), its values
checked when the arms are built; otherwise an engine option of the option table (`engines/options.py`: policy,
max_running, max_batched_tokens, kv_memory_mb, chunked_prefill, admission, aging_s, fallback, ...), checked there, or
one of the study's own assumptions about the run:

    batching  "static" or "continuous" (a simulated engine's scheduler, an in-process engine's kind)
    load      offered-load multiplier: arrivals come this many times as fast
    tenants   keep only the tenants matching this glob (e.g. a quiet tenant's run alone)

A variant may build on an earlier one (`base`), so "fair + admission" is one change on top of "fair".
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from engines.errors import EngineInputError
from engines.options import IN_PROCESS, OPTIONS, SIMULATED
from engines.sim.cluster import CLUSTER_KEYS
from engines.sim.disagg import DISAGG_KEYS

POOLED = {"cluster": CLUSTER_KEYS, "disagg": DISAGG_KEYS}  # simulated fleets: their keys, then replica=SPEC

RUN_ASSUMPTIONS = {
    "batching": "static or continuous batching",
    "load": "offered-load multiplier (> 0)",
    "tenants": "keep only the tenants matching a glob",
}


@dataclass(frozen=True)
class Arm:
    """What one variant runs: an engine spec, a load multiplier and a tenant filter."""

    name: str
    spec: str
    load: float = 1.0
    tenants: str | None = None
    change: str = ""  # the assumption changed, in words

    def keeps(self, tenant: str) -> bool:
        return self.tenants is None or fnmatch.fnmatchcase(tenant, self.tenants)


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """(kind, options); a cluster's or P/D pair's `replica=...` (the rest of the spec) is one option, kept last."""
    kind, _, rest = spec.partition(":")
    replica = None
    if kind in POOLED and "replica=" in rest:
        rest, _, replica = rest.partition("replica=")
    options = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        options[key.strip()] = value.strip()
    if replica is not None:
        options["replica"] = replica
    return kind, options


def _join(kind: str, options: dict[str, str]) -> str:
    if "replica" in options:  # the rest of the spec: last
        options = {**{k: v for k, v in options.items() if k != "replica"}, "replica": options["replica"]}
    return kind + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def change_problem(base_spec: str, change: dict[str, Any]) -> str | None:
    """Why `change` is not one valid assumption to change on `base_spec`, or None."""
    ((key, value),) = change.items()
    kind, _ = split_spec(base_spec)
    if key == "batching":
        return None if value in IN_PROCESS else f"batching = {value!r}: expected static or continuous"
    if key == "load":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        return None if ok else f"load = {value!r}: expected a multiplier > 0"
    if key == "tenants":
        return None if isinstance(value, str) and value else f"tenants = {value!r}: expected a glob"
    if kind in POOLED:  # a fleet's own keys (router, replicas, prefill, decode, link, ...), checked by its parser
        known = [k for k in POOLED[kind] if k != "label"]
        if key not in known:
            return f"unknown assumption {key!r} of a {kind} engine (known: {', '.join([*RUN_ASSUMPTIONS, *known])})"
        return None
    option = OPTIONS.get(key)
    if option is None or key == "label":
        known = [*RUN_ASSUMPTIONS, *(o for o in OPTIONS if o != "label")]
        return f"unknown assumption {key!r} (known: {', '.join(known)})"
    if not option.applies_to(kind) and not (kind in SIMULATED or option.applies_to("continuous")):
        return f"{key} does not apply to a {kind} engine"
    try:
        option.check(_text(value), f"change {key}")
    except EngineInputError as exc:
        return str(exc)
    return None


def resolve(base_spec: str, variants: list[Any]) -> list[Arm]:
    """The baseline and every variant as arms, each variant's changes applied over its base's."""
    kind, options = split_spec(base_spec)
    arms = {"baseline": Arm("baseline", _join(kind, {**options, "label": "baseline"}))}
    applied: dict[str, list[tuple[str, Any]]] = {"baseline": []}
    for v in variants:
        changes = [*applied[v.base or "baseline"], *v.change.items()]
        applied[v.name] = changes
        k, opts, load, tenants = kind, dict(options), 1.0, None
        for key, value in changes:
            if key == "batching":
                if k in SIMULATED:
                    opts["scheduler"] = value
                else:
                    k = value
                    opts = {n: x for n, x in opts.items() if n == "label" or OPTIONS[n].applies_to(k)}
            elif key == "load":
                load *= float(value)
            elif key == "tenants":
                tenants = value
            else:
                opts[key] = _text(value)
        opts["label"] = v.name
        words = ", ".join(f"{key}={_text(value)}" for key, value in v.change.items())
        arms[v.name] = Arm(v.name, _join(k, opts), load, tenants, f"{v.base + ' + ' if v.base else ''}{words}")
    return list(arms.values())


def simulated(spec: str) -> str:
    """`spec` on the simulator: an in-process kind becomes `sim:scheduler=KIND` (options the simulator
    does not take, such as step_delay_ms, are dropped); other kinds are left as they are."""
    kind, options = split_spec(spec)
    if kind not in IN_PROCESS:
        return spec
    kept = {k: v for k, v in options.items() if k == "label" or (k in OPTIONS and OPTIONS[k].applies_to("sim"))}
    return _join("sim", {"scheduler": kind, **kept})
