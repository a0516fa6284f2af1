"""A simulated serving cluster: N simulated engines behind a router, on one virtual clock.

`--engine cluster:replicas=4,router=least_outstanding,replica=sim:model=...` (`replica=` takes the rest of
the spec). Each replica is an unchanged `SimEngine` (the real schedulers in virtual time); the router
(`engines.sim.router`) picks one per request as it arrives. The cluster advances the replica whose clock
is furthest behind by one step at a time, so every replica's steps happen in virtual-time order and the
load generator sees one engine. Each finish event names the replica that served the request.
`path_ms=D` (default 0) holds each request D ms before the router sees it: the serving path a real fleet
has and the simulated one lacks (HTTP client, router hop, server frontend, the tokens' way back), lumped at
the front, so TTFT and E2E grow by D and TPOT does not. Its value is measured (docs/cluster.md "Where the
twin's shortfall goes"), never fitted to the run it judges.
The replicas' step traces are not written (engines/sim/pooled.py says why).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace
from typing import Any

from engines.api import FinishEvent, Request
from engines.errors import EngineInputError
from engines.sim.engine import DecodeCallback, SimEngine, StepCallback
from engines.sim.fit_range import pooled_description
from engines.sim.pooled import PooledEngine
from engines.sim.router import POLICIES, Router, RouterConfig

CLUSTER_KEYS = (
    "replicas",
    "router",
    "load",
    "seed",
    "cache_threshold",
    "balance_abs",
    "balance_rel",
    "path_ms",
    "label",
)
ROUTER_ALIASES = {"least_loaded": "least_outstanding", "prefix": "cache_aware", "sticky": "session_sticky"}


@dataclass(frozen=True)
class ClusterConfig:
    replicas: int
    router: RouterConfig
    path_s: float = 0.0  # each request's wait before the router sees it (`path_ms`)


def cluster_config(given: dict[str, str], where: str) -> ClusterConfig:
    """The checked cluster keys of a spec (strings as typed); every bad value named in one line."""
    unknown = sorted(set(given) - set(CLUSTER_KEYS))
    if unknown:
        raise EngineInputError(f"{where}: unknown cluster option {unknown[0]!r} (known: {', '.join(CLUSTER_KEYS)})")

    def number(key: str, default: float, cast: type = float, low: float = 0.0) -> Any:
        raw = given.get(key)
        if raw is None:
            return default
        try:
            value = cast(raw)
        except ValueError:
            raise EngineInputError(f"{where}: {key}={raw!r} is not a {cast.__name__}") from None
        if not (isinstance(value, int) or math.isfinite(value)) or value < low:
            raise EngineInputError(f"{where}: {key}={raw!r} must be a finite number >= {low:g}")
        return value

    replicas = number("replicas", 2, int, 1)
    policy = ROUTER_ALIASES.get(given.get("router", "round_robin"), given.get("router", "round_robin"))
    if policy not in POLICIES:
        raise EngineInputError(f"{where}: unknown router policy {given['router']!r} (known: {', '.join(POLICIES)})")
    load = given.get("load", "requests")
    if load not in ("requests", "tokens"):
        raise EngineInputError(f"{where}: load={load!r} must be requests or tokens")
    d = RouterConfig()
    router = RouterConfig(
        policy=policy,
        load=load,
        seed=number("seed", 0, int),  # type: ignore[arg-type]
        cache_threshold=number("cache_threshold", d.cache_threshold),
        balance_abs=number("balance_abs", d.balance_abs),
        balance_rel=number("balance_rel", d.balance_rel, low=1.0),
    )
    return ClusterConfig(replicas, router, number("path_ms", 0.0) / 1e3)


class ClusterEngine(PooledEngine):
    """Replicas behind a router, seen by the virtual-time load generator as one engine."""

    def __init__(self, config: ClusterConfig, replicas: list[SimEngine], name: str) -> None:
        self.name = name
        self.config = config
        self.replicas = replicas
        block = replicas[0].options.block_size
        self.router = Router(replace(config.router, block_size=block), len(replicas))
        self._where: dict[str, int] = {}
        self._sessions: dict[str, str] = {}
        self._cached = self._prompt = 0  # prompt tokens taken from the replicas' prefix caches, of all finished
        self._held: list[tuple[float, int, Request]] = []  # (due at the router, order sent, request): path_ms
        self._sent = 0
        self._paused = False

    def set_sessions(self, sessions: dict[str, str]) -> None:
        """Request id -> conversation, for the session_sticky router (the sessions scenario gives it)."""
        self._sessions = sessions

    def _tag(self, event: FinishEvent) -> FinishEvent:
        self.router.finished(event.request_id)
        if event.cached_tokens is not None and event.prompt_tokens:
            self._cached += event.cached_tokens
            self._prompt += event.prompt_tokens
        return replace(event, replica=self._where.pop(event.request_id, None))

    @property
    def in_flight(self) -> int:
        return super().in_flight + len(self._held)

    def submit(self, request: Request, at: float) -> FinishEvent | None:
        if self.config.path_s > 0:  # routed when it reaches the router (run_until), with the load it finds then
            heapq.heappush(self._held, (at + self.config.path_s, self._sent, request))
            self._sent += 1
            return None
        return self._route(request, at)

    def _route(self, request: Request, at: float) -> FinishEvent | None:
        i = self.router.route(request, self._sessions.get(request.request_id))
        self._where[request.request_id] = i
        rejected = self.replicas[i].submit(request, at)
        return None if rejected is None else self._tag(rejected)

    def abort(self, request_id: str) -> FinishEvent | None:
        self._held = [h for h in self._held if h[2].request_id != request_id]  # still on its way: nothing to free
        heapq.heapify(self._held)
        i = self._where.get(request_id)
        event = None if i is None else self.replicas[i].abort(request_id)
        return None if event is None else self._tag(event)

    def run_until(self, until: float, on_step: StepCallback, on_decode: DecodeCallback | None = None) -> None:
        """The replicas' steps up to `until`, each held request routed when its time comes (`path_ms`)."""
        self._paused = False
        while self._held and self._held[0][0] <= until:
            due = self._held[0][0]
            self._advance(due, on_step, on_decode)
            if self._paused:
                return  # the load generator asked for control; the held request waits for the next call
            _, _, request = heapq.heappop(self._held)
            rejected = self._route(request, due)
            if rejected is not None:  # refused at the replica (its queue full): the load generator hears it now
                self._paused = on_step(due, due, [], [], [rejected])
                if self._paused:
                    return
        self._advance(until, on_step, on_decode)

    def _advance(self, until: float, on_step: StepCallback, on_decode: DecodeCallback | None) -> None:
        paused = False

        def one_step(
            t_start: float, t_end: float, admitted: list[str], sampled: list[str], finished: list[FinishEvent]
        ) -> bool:
            nonlocal paused
            paused = on_step(t_start, t_end, admitted, sampled, [self._tag(e) for e in finished])
            return True  # back to the cluster after every step: the replica furthest behind goes next

        def decode_run(ids: list[str], ends: list[float]) -> bool:
            # A decode run admits and finishes nothing, so no other replica can see it: it may run ahead of them.
            # Back to the cluster afterwards, so every step that admits or finishes keeps its place in time.
            nonlocal paused
            assert on_decode is not None
            paused = on_decode(ids, ends)
            return True

        while not paused:
            busy = [r for r in self.replicas if r.scheduler.has_work()]
            if not busy:
                if until != math.inf:
                    for r in self.replicas:
                        r.now = max(r.now, until)
                break
            behind = min(busy, key=lambda r: r.now)
            if behind.now >= until:
                for r in self.replicas:
                    if not r.scheduler.has_work():
                        r.now = max(r.now, until)
                break
            behind.run_until(until, one_step, decode_run if on_decode is not None else None)
        self._paused = paused

    def describe(self) -> dict[str, Any]:
        first = pooled_description(self.replicas[0].describe(), [r.cost for r in self.replicas])
        return {
            **first,
            "name": self.name,
            "kind": "cluster",
            "replicas": len(self.replicas),
            "path_ms": self.config.path_s * 1e3,
            "replica": {k: v for k, v in first.items() if k != "name"},
            "router": {
                **self.router.summary(),
                "prefix_hit_rate": self._cached / self._prompt if self._prompt else None,
            },
        }
