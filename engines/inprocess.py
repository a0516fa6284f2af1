"""In-process engines on a real model: static or continuous batching behind the one interface."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from engines import compute_threads
from engines.aging import aged
from engines.api import Engine, EngineEvent, FinishEvent, Request, StepSink
from engines.block_manager import BlockManager, blocks_for_budget
from engines.engine_core import EngineCore
from engines.errors import ENGINE_FAILURE, EngineInputError
from engines.kernels import kernel_info
from engines.model.loader import LoadedModel
from engines.model_runner import ModelRunner
from engines.policy import make_policy
from engines.scheduler import ContinuousConfig, ContinuousScheduler
from engines.static_scheduler import StaticConfig, StaticScheduler

Kind = Literal["static", "continuous"]


@dataclass(frozen=True)
class KVConfig:
    """The KV-cache pool: block size and either a memory budget or an exact block count."""

    block_size: int = 16
    memory_mb: float = 256.0  # the KV pool's budget; sets how many blocks exist
    blocks: int | None = None  # an exact pool size, overriding memory_mb (tests, tiny pools)
    prefix_caching: bool = True  # full blocks of shared prefixes are kept and reused (engines/block_manager.py)

    def num_blocks(self, bytes_per_token: int) -> int:
        if self.blocks is not None:
            return self.blocks
        return blocks_for_budget(int(self.memory_mb * 2**20), bytes_per_token, self.block_size)


@dataclass(frozen=True)
class EngineOptions:
    """Everything that configures an in-process engine (built from the option table, `engines/options.py`)."""

    kind: Kind = "continuous"
    policy: str = "fcfs"
    aging_s: float | None = None  # starvation aging (engines/aging.py)
    kv: KVConfig = field(default_factory=KVConfig)
    static: StaticConfig = field(default_factory=StaticConfig)
    continuous: ContinuousConfig = field(default_factory=ContinuousConfig)
    step_delay_s: float = 0.0
    slowdown: float = 0.0  # 0.1 = every step takes 10% longer (gate calibration)


class InProcessEngine(Engine):
    """Static or continuous batching on a loaded model: an `EngineCore` thread behind the async interface.

    `generate` validates a request (one clear error event, never an exception), submits it to the loop
    and streams the loop's events for it back onto the caller's event loop.
    """

    def __init__(self, loaded: LoadedModel, options: EngineOptions, name: str | None = None) -> None:
        self.name = name or options.kind
        self.options = options
        self.loaded = loaded
        self.max_context = int(loaded.model.config.max_position_embeddings)
        self.vocab_size = int(loaded.model.config.vocab_size)
        bytes_per_token = ModelRunner.kv_bytes_per_token(loaded.model)
        num_blocks = options.kv.num_blocks(bytes_per_token)
        if num_blocks < 1:
            raise EngineInputError(
                f"--kv-memory-mb {options.kv.memory_mb}: holds no block of {options.kv.block_size} tokens "
                f"at {bytes_per_token} bytes per token"
            )
        self.blocks = BlockManager(num_blocks, options.kv.block_size, options.kv.prefix_caching)
        pad = loaded.tokenizer.pad_token_id
        self.runner = ModelRunner(loaded.model, num_blocks, options.kv.block_size, pad if pad is not None else 0)
        policy = aged(make_policy(options.policy), options.aging_s)
        eos = loaded.eos_token_id
        scheduler: StaticScheduler | ContinuousScheduler
        if options.kind == "static":
            scheduler = StaticScheduler(options.static, policy, self.blocks, eos)
        else:
            scheduler = ContinuousScheduler(options.continuous, policy, self.blocks, eos)
        self.scheduler = scheduler
        self.core = EngineCore(
            scheduler,
            self.runner,
            blocks_total=lambda: self.blocks.num_blocks,
            blocks_used=lambda: self.blocks.num_used,
            step_delay_s=options.step_delay_s,
            slowdown=options.slowdown,
        )
        self._streams: dict[str, asyncio.Queue[EngineEvent]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self.blocks.reset()  # every run starts with an empty prefix cache: no trial warms the next
        self.core.event_sink = self._from_engine_thread
        self.core.start()
        self._started = True

    async def stop(self) -> None:
        if self._started:
            await asyncio.to_thread(self.core.stop)
            self._started = False

    def set_step_sink(self, sink: StepSink | None) -> None:
        self.core.step_sink = sink

    async def reset_prefix_cache(self) -> None:
        """Forget every cached prefix (`POST /reset_prefix_cache`); blocks in use stay with their sequences."""
        if not self._started:
            self.blocks.reset()
            return
        assert self._loop is not None
        done = self._loop.create_future()
        self.core.reset_prefix_cache(lambda: self._loop.call_soon_threadsafe(done.set_result, None))  # type: ignore[union-attr]
        await done

    # -- requests -------------------------------------------------------------------------
    def validate(self, request: Request) -> None:
        """Raise EngineInputError naming the value when `request` can never be served."""
        rid = request.request_id
        n = len(request.prompt_token_ids)
        if n == 0:
            raise EngineInputError(f"request {rid}: empty prompt")
        if request.max_tokens <= 0:
            raise EngineInputError(f"request {rid}: max_tokens={request.max_tokens} must be > 0")
        if n + request.max_tokens > self.max_context:
            raise EngineInputError(
                f"request {rid}: prompt of {n} tokens + max_tokens {request.max_tokens} exceeds the "
                f"model context of {self.max_context}"
            )
        bad = next((t for t in request.prompt_token_ids if not 0 <= int(t) < self.vocab_size), None)
        if bad is not None:
            raise EngineInputError(
                f"request {rid}: prompt token id {bad} outside the vocabulary 0..{self.vocab_size - 1}"
            )
        need = self.blocks.blocks_for_tokens(n + request.max_tokens)
        if need > self.blocks.num_blocks:
            raise EngineInputError(
                f"request {rid}: needs {need} KV blocks, the pool has {self.blocks.num_blocks} (raise --kv-memory-mb)"
            )

    async def generate(self, request: Request) -> AsyncIterator[EngineEvent]:
        if not self._started:
            raise RuntimeError("engine not started")
        try:
            self.validate(request)
        except EngineInputError as exc:
            n = len(request.prompt_token_ids)
            yield FinishEvent(
                request.request_id,
                "error",
                n,
                0,
                time.perf_counter(),
                error_type="invalid_request",
                error_message=str(exc),
            )
            return
        if request.request_id in self._streams:
            raise EngineInputError(f"request {request.request_id}: id already in flight")
        queue: asyncio.Queue[EngineEvent] = asyncio.Queue()
        self._streams[request.request_id] = queue
        self.core.submit(request)
        if self.core.error is not None:  # the loop died earlier: nothing will ever answer this request
            queue.put_nowait(self._failure_event(request.request_id))
        try:
            while True:
                event = await queue.get()
                yield event
                if isinstance(event, FinishEvent):
                    return
        finally:
            self._streams.pop(request.request_id, None)

    async def abort(self, request_id: str) -> None:
        self.core.abort(request_id)

    def _from_engine_thread(self, events: list[EngineEvent]) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._dispatch, events)

    @property
    def failure(self) -> str | None:
        """Why the engine loop died (one line), or None while it runs."""
        error = self.core.error
        if error is None:
            return None
        return f"engine loop failed: {type(error).__name__}: {error}".splitlines()[0]

    def _failure_event(self, request_id: str) -> FinishEvent:
        return FinishEvent(
            request_id, "error", 0, 0, time.perf_counter(), error_type=ENGINE_FAILURE, error_message=self.failure
        )

    def _dispatch(self, events: list[EngineEvent]) -> None:
        for event in events:  # a step that completed before the loop died still delivers its tokens and finishes
            queue = self._streams.get(event.request_id)
            if queue is not None:
                queue.put_nowait(event)
        if self.core.error is not None:
            ended = {e.request_id for e in events if isinstance(e, FinishEvent)}
            for rid, queue in list(self._streams.items()):
                if rid not in ended:
                    queue.put_nowait(self._failure_event(rid))

    # -- manifest -------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        options = asdict(self.options)
        options.pop("static" if self.options.kind == "continuous" else "continuous")
        return {
            "name": self.name,
            "kind": self.options.kind,
            "options": options,
            "kv_blocks": self.blocks.num_blocks,
            "kv_bytes_per_token": ModelRunner.kv_bytes_per_token(self.loaded.model),
            "attention": self.runner.attention_backend,
            "kernel": kernel_info(),
            "torch_threads": compute_threads.count(),
            "model": self.loaded.describe(),
        }
