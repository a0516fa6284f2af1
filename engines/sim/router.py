"""Router policies for a simulated cluster: which replica takes each request, and why.

The policies of the real routers (vllm-router, sglang-router): round_robin, random (seeded),
least_outstanding (requests or tokens in flight), power_of_two (two random replicas, the less loaded),
cache_aware and session_sticky. A router sees only what a real one sees: what it routed and what finished,
never a replica's KV cache. `cache_aware` follows sglang-router's: when loads are imbalanced (max - min
above an absolute threshold and max above min times a relative one) the least loaded replica takes the
request; otherwise the replica whose routed prompts share the longest prefix with it, if that prefix is over
`cache_threshold` of the prompt, else the replica holding the fewest prefixes (most room). The router's
prefix tree is kept at block granularity (a chain of block hashes) and never evicts: an approximation.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from engines.api import Request

POLICIES = ("round_robin", "random", "least_outstanding", "power_of_two", "cache_aware", "session_sticky")
Load = Literal["requests", "tokens"]


@dataclass(frozen=True)
class RouterConfig:
    policy: str = "round_robin"
    load: Load = "requests"  # what least_outstanding, power_of_two and cache_aware's balance count
    seed: int = 0
    # sglang-router's cache_aware defaults (router_args: cache_threshold 0.3, balance_abs_threshold 64,
    # balance_rel_threshold 1.5)
    cache_threshold: float = 0.3
    balance_abs: float = 64.0
    balance_rel: float = 1.5
    block_size: int = 16  # the prefix tree's granularity, as the replicas' KV blocks


@dataclass
class Router:
    """Chooses a replica per request and keeps the counts the run's metrics report."""

    config: RouterConfig
    replicas: int
    requests: list[float] = field(init=False)
    tokens: list[float] = field(init=False)
    decisions: Counter = field(default_factory=Counter)  # reason -> count
    served: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.requests = [0.0] * self.replicas
        self.tokens = [0.0] * self.replicas
        self.served = [0] * self.replicas
        self._rng = random.Random(self.config.seed)
        self._next = 0
        self._trees: list[set[int]] = [set() for _ in range(self.replicas)]
        self._sessions: dict[str, int] = {}
        self._cost: dict[str, tuple[int, float]] = {}  # request id -> (replica, tokens) while in flight

    def _load(self) -> list[float]:
        return self.tokens if self.config.load == "tokens" else self.requests

    def _least(self, among: list[int] | None = None) -> int:
        load = self._load()
        return min(among if among is not None else range(self.replicas), key=lambda i: (load[i], i))

    def _prefix_hashes(self, request: Request) -> list[int]:
        ids, b = request.prompt_token_ids, self.config.block_size
        hashes, h = [], 0
        for start in range(0, len(ids) - len(ids) % b, b):
            h = hash((h, tuple(ids[start : start + b])))
            hashes.append(h)
        return hashes

    def route(self, request: Request, session: str | None = None) -> int:
        """The replica for `request`; counts it as in flight there until `finished`."""
        policy = self.config.policy
        hashes: list[int] = []
        if policy == "round_robin":
            choice, reason = self._next % self.replicas, "round_robin"
            self._next += 1
        elif policy == "random":
            choice, reason = self._rng.randrange(self.replicas), "random"
        elif policy == "least_outstanding":
            choice, reason = self._least(), "least_loaded"
        elif policy == "power_of_two":
            # vllm-router's: two distinct random replicas, the less loaded; on equal loads the first drawn, so a
            # tie goes to a seeded random one, never always to the lower index
            first, *other = self._rng.sample(range(self.replicas), min(2, self.replicas))
            load = self._load()
            choice = other[0] if other and load[other[0]] < load[first] else first
            reason = "power_of_two"
        elif policy == "session_sticky":
            key = session or request.request_id
            if key in self._sessions:
                choice, reason = self._sessions[key], "sticky"
            else:
                choice, reason = self._least(), "new_session_least_loaded"
                self._sessions[key] = choice
        else:  # cache_aware
            hashes = self._prefix_hashes(request)
            choice, reason = self._cache_aware(hashes)
        if hashes or policy == "cache_aware":
            self._trees[choice].update(hashes)
        cost = len(request.prompt_token_ids) + request.max_tokens
        self.requests[choice] += 1
        self.tokens[choice] += cost
        self.served[choice] += 1
        self._cost[request.request_id] = (choice, cost)
        self.decisions[reason] += 1
        return choice

    def _cache_aware(self, hashes: list[int]) -> tuple[int, str]:
        c, load = self.config, self._load()
        high, low = max(load), min(load)
        if high - low > c.balance_abs and high > low * c.balance_rel:
            return self._least(), "balance"
        best, matched = 0, -1
        for i, tree in enumerate(self._trees):
            n = 0
            for h in hashes:
                if h not in tree:
                    break
                n += 1
            if n > matched:
                best, matched = i, n
        if hashes and matched / len(hashes) > c.cache_threshold:
            return best, "cache_hit"
        return min(range(self.replicas), key=lambda i: (len(self._trees[i]), load[i], i)), "cache_miss"

    def finished(self, request_id: str) -> int | None:
        """A request left its replica (finished, failed or aborted): its load is released."""
        entry = self._cost.pop(request_id, None)
        if entry is None:
            return None
        replica, cost = entry
        self.requests[replica] -= 1
        self.tokens[replica] -= cost
        return replica

    def summary(self) -> dict:
        served = self.served
        mean = sum(served) / len(served) if served else 0.0
        return {
            "policy": self.config.policy,
            "load": self.config.load,
            "requests_per_replica": list(served),
            # None, not 0: with no request served the imbalance is not known
            "imbalance_max_over_mean": (max(served) / mean) if mean else None,
            "decisions": dict(sorted(self.decisions.items())),
        }
