"""Prefill/decode disaggregation in simulation: a prefill pool, a decode pool, a KV transfer between them.

`--engine disagg:prefill=P,decode=D,link=ib400,replica=sim:...`. A request is prefilled on the least loaded
prefill replica (as vLLM's P/D proxy does, with max_tokens=1; that token is discarded), its KV cache crosses
the link in `kv_bytes_per_token x prompt tokens / bandwidth + latency` (bytes per token from the model config:
2 x layers x kv_heads x head_dim x dtype bytes), lands in the least loaded decode replica's prefix cache, and
that replica produces every output token. TTFT splits into prefill queue (arrival to prefill admission),
prefill (to the prefill step's end), transfer, and first decode step (KV arrival to the first token,
including any wait for a decode slot); each finish event carries the two hand-off times so records hold the
split. The decode replica recomputes the prompt's last, partial block (its prefix cache holds full blocks
only): at most `block_size` tokens in its first step. Without prefix caching on the replicas nothing lands in
a cache and decode recomputes the prompt. Every replica steps in virtual-time order, as in the cluster.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace
from typing import Any

from engines.api import FinishEvent, Request
from engines.errors import EngineInputError
from engines.sequence import Sequence
from engines.sim.engine import DecodeCallback, SimEngine, StepCallback
from engines.sim.fit_range import pooled_description
from engines.sim.pooled import PooledEngine

# Per-direction bandwidth (bytes/s) and latency (s) of the links a KV transfer crosses.
LINKS: dict[str, tuple[float, float]] = {
    # NVLink 4 (H100 SXM): 900 GB/s total, 450 GB/s each way (NVIDIA H100 datasheet); latency a few us
    "nvlink": (450e9, 5e-6),
    # InfiniBand NDR 400 Gb/s = 50 GB/s per port each way (NVIDIA ConnectX-7); RDMA latency ~ 10 us end to end
    "ib400": (50e9, 10e-6),
    # PCIe Gen5 x16: 64 GB/s each way before protocol overhead (PCI-SIG 5.0 specification)
    "pcie5": (64e9, 10e-6),
    # vllm-project/vllm#50913: 38.7 ms per ~167 MB measured through the NIXL connector (4.3 GB/s effective)
    "measured": (167e6 / 38.7e-3, 0.0),
}
SPLIT = ("prefill_queue", "prefill", "transfer", "first_decode_step")
DISAGG_KEYS = ("prefill", "decode", "link", "bandwidth_gbps", "latency_us", "decode_hardware", "label")


@dataclass(frozen=True)
class DisaggConfig:
    prefill: int
    decode: int
    link: str
    bandwidth: float  # bytes/s; math.inf: instantaneous
    latency_s: float
    decode_hardware: str | None = None  # the decode pool's GPU when it differs from the replica spec's


def disagg_config(given: dict[str, str], where: str) -> DisaggConfig:
    unknown = sorted(set(given) - set(DISAGG_KEYS))
    if unknown:
        raise EngineInputError(f"{where}: unknown disagg option {unknown[0]!r} (known: {', '.join(DISAGG_KEYS)})")

    def number(key: str, default: float, low: float, strict: bool = False) -> float:
        raw = given.get(key)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise EngineInputError(f"{where}: {key}={raw!r} is not a number") from None
        if math.isnan(value) or value < low or (strict and value <= low):
            raise EngineInputError(f"{where}: {key}={raw!r} must be {'>' if strict else '>='} {low:g}")
        return value

    pools = {}
    for key in ("prefill", "decode"):
        n = number(key, 1, 1)
        if n != int(n) or math.isinf(n):
            raise EngineInputError(f"{where}: {key}={given[key]!r} must be a whole number of replicas >= 1")
        pools[key] = int(n)
    link = given.get("link", "ib400")
    if link not in LINKS:
        raise EngineInputError(f"{where}: unknown link {link!r} (known: {', '.join(LINKS)})")
    bandwidth, latency = LINKS[link]
    bandwidth = number("bandwidth_gbps", bandwidth / 1e9, 0, strict=True) * 1e9
    latency = number("latency_us", latency * 1e6, 0) * 1e-6
    if math.isinf(latency):
        raise EngineInputError(f"{where}: latency_us={given['latency_us']!r} must be finite")
    return DisaggConfig(pools["prefill"], pools["decode"], link, bandwidth, latency, given.get("decode_hardware"))


def land_kv(engine: SimEngine, request: Request, now: float) -> bool:
    """The transferred KV of `request`'s prompt enters `engine`'s prefix cache (full blocks); False: no room."""
    blocks = engine.blocks
    if not blocks.prefix_caching:
        return False
    n = len(request.prompt_token_ids) // blocks.block_size
    if not n or not blocks.can_allocate(n):
        return False
    seq = Sequence.from_request(request, -1, now)
    blocks.allocate(seq, n)
    seq.num_computed_tokens = n * blocks.block_size
    blocks.commit(seq)
    blocks.free(seq)  # cached, unreferenced: the decode request takes it at admission
    return True


class DisaggEngine(PooledEngine):
    """Prefill and decode pools seen by the virtual-time load generator as one engine."""

    def __init__(
        self,
        config: DisaggConfig,
        prefill: list[SimEngine],
        decode: list[SimEngine],
        name: str,
        kv_bytes_per_token: int,
    ) -> None:
        self.name, self.config = name, config
        self.prefill, self.decode = prefill, decode
        self.kv_bytes_per_token = kv_bytes_per_token
        self._requests: dict[str, Request] = {}
        self._stage: dict[str, tuple[str, int]] = {}  # request id -> ("prefill" | "transfer" | "decode", replica)
        self._handoff: dict[str, tuple[float, float, int | None]] = {}  # id -> (prefill end, KV arrival, cached)
        self._times: dict[str, list[float]] = {}  # id -> [arrival, prefill admission] until its first token
        self.split_sums = [0.0, 0.0, 0.0, 0.0]  # prefill queue, prefill, transfer, first decode step (s)
        self.split_count = 0
        self._transfers: list[tuple[float, int, str]] = []  # (arrival, order, request id)
        self._order = 0
        self.transferred_bytes = 0
        self.landed = self.recomputed = 0

    @property
    def replicas(self) -> list[SimEngine]:
        return [*self.prefill, *self.decode]

    def transfer_s(self, prompt_tokens: int) -> float:
        return prompt_tokens * self.kv_bytes_per_token / self.config.bandwidth + self.config.latency_s

    @staticmethod
    def _least(pool: list[SimEngine]) -> int:
        return min(range(len(pool)), key=lambda i: (pool[i].in_flight, i))

    def submit(self, request: Request, at: float) -> FinishEvent | None:
        i = self._least(self.prefill)
        self._requests[request.request_id] = request
        self._stage[request.request_id] = ("prefill", i)
        self._times[request.request_id] = [at, at]
        rejected = self.prefill[i].submit(replace(request, max_tokens=1, ignore_eos=True), at)
        if rejected is not None:
            self._forget(request.request_id)
            return replace(rejected, output_tokens=0)
        return None

    def _forget(self, rid: str) -> None:
        self._requests.pop(rid, None)
        self._stage.pop(rid, None)
        self._handoff.pop(rid, None)
        self._times.pop(rid, None)

    def abort(self, request_id: str) -> FinishEvent | None:
        stage = self._stage.get(request_id)
        if stage is None:
            return None
        where, i = stage
        request = self._requests[request_id]
        if where == "transfer":
            event = FinishEvent(request_id, "abort", len(request.prompt_token_ids), 0, self.now)
        else:
            event = (self.prefill if where == "prefill" else self.decode)[i].abort(request_id)
            if event is not None and where == "prefill":
                event = replace(event, output_tokens=0)  # the prefill's token is never sent
        self._forget(request_id)
        return event

    def _arrive(self, t: float, rid: str) -> FinishEvent | None:
        request = self._requests[rid]
        d = self._least(self.decode)
        engine = self.decode[d]
        engine.now = max(engine.now, t)  # an idle replica waits for the KV; a busy one is at or past t
        if land_kv(engine, request, t):
            self.landed += 1
        else:
            self.recomputed += 1
        self._stage[rid] = ("decode", d)
        rejected = engine.submit(request, t)
        return None if rejected is None else self._done(rejected, d)

    def _done(self, event: FinishEvent, replica: int) -> FinishEvent:
        prefill_end, kv_arrived, cached = self._handoff.get(event.request_id, (None, None, None))
        self._forget(event.request_id)
        # the prefix cache hit is the prefill's: the decode replica's "hit" is the transferred KV
        return replace(event, replica=replica, t_prefill_end=prefill_end, t_kv_arrived=kv_arrived, cached_tokens=cached)

    def run_until(self, until: float, on_step: StepCallback, on_decode: DecodeCallback | None = None) -> None:
        # on_decode unused: a decode replica's arrivals are the prefill pool's finishes, so none may run ahead
        paused = False
        prefill_ids = {id(r) for r in self.prefill}

        def step_of(engine: SimEngine) -> StepCallback:
            on_prefill = id(engine) in prefill_ids
            index = (self.prefill if on_prefill else self.decode).index(engine)

            def one_step(
                t_start: float, t_end: float, admitted: list[str], sampled: list[str], finished: list[FinishEvent]
            ) -> bool:
                nonlocal paused
                if on_prefill:  # admission is the prefill's; its one token is never sent
                    for rid in admitted:
                        self._times[rid][1] = t_start
                    for event in finished:
                        self._after_prefill(event, t_end)
                    paused = on_step(t_start, t_end, admitted, [], [e for e in finished if e.reason == "error"])
                else:
                    for rid in sampled:
                        self._first_token(rid, t_end)
                    paused = on_step(t_start, t_end, [], sampled, [self._done(e, index) for e in finished])
                return True

            return one_step

        while not paused:
            busy = [r for r in self.replicas if r.scheduler.has_work()]
            t_busy = min((r.now for r in busy), default=math.inf)
            t_kv = self._transfers[0][0] if self._transfers else math.inf
            if min(t_busy, t_kv) >= until or (not busy and not self._transfers):
                if until != math.inf:
                    for r in self.replicas:
                        if not r.scheduler.has_work():
                            r.now = max(r.now, until)
                return
            if t_kv <= t_busy:
                t, _, rid = heapq.heappop(self._transfers)
                rejected = self._arrive(t, rid)
                if rejected is not None:
                    paused = on_step(t, t, [], [], [rejected])
                continue
            behind = min(busy, key=lambda r: r.now)
            behind.run_until(until, step_of(behind))

    def _after_prefill(self, event: FinishEvent, t_end: float) -> None:
        rid = event.request_id
        if event.reason == "error":
            self._forget(rid)
            return
        request = self._requests[rid]
        prompt = len(request.prompt_token_ids)
        arrival = t_end + self.transfer_s(prompt)
        self.transferred_bytes += prompt * self.kv_bytes_per_token
        self._handoff[rid] = (t_end, arrival, event.cached_tokens)
        self._stage[rid] = ("transfer", -1)
        heapq.heappush(self._transfers, (arrival, self._order, rid))
        self._order += 1

    def _first_token(self, rid: str, t: float) -> None:
        times = self._times.pop(rid, None)
        if times is None:  # not its first token
            return
        prefill_end, kv_arrived, _ = self._handoff[rid]
        parts = (times[1] - times[0], prefill_end - times[1], kv_arrived - prefill_end, t - kv_arrived)
        self.split_sums = [a + b for a, b in zip(self.split_sums, parts, strict=True)]
        self.split_count += 1

    @property
    def in_flight(self) -> int:
        return len(self._stage)

    def describe(self) -> dict[str, Any]:
        # both pools on one profile: their steps pooled (a decode pool on other hardware is a roofline: not counted)
        engines = [*self.prefill, *self.decode]
        first = pooled_description(self.prefill[0].describe(), [e.cost for e in engines])
        c = self.config
        return {
            **first,
            "name": self.name,
            "kind": "disagg",
            "disagg": {
                "prefill": c.prefill,
                "decode": c.decode,
                "link": c.link,
                "bandwidth_bytes_per_s": c.bandwidth if math.isfinite(c.bandwidth) else None,
                "latency_s": c.latency_s,
                "kv_bytes_per_token": self.kv_bytes_per_token,
                "transferred_bytes": self.transferred_bytes,
                "kv_landed": self.landed,
                "kv_recomputed": self.recomputed,
                "decode_hardware": c.decode_hardware,
                # None, not 0, when no request got a first token
                "mean_ttft_split_s": {
                    name: (total / self.split_count if self.split_count else None)
                    for name, total in zip(SPLIT, self.split_sums, strict=True)
                },
            },
            "decode_replica": {k: v for k, v in self.decode[0].describe().items() if k != "name"},
        }
