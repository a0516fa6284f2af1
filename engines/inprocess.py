"""In-process engines on a real model: static or continuous batching behind the one interface."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

from engines import compute_threads
from engines.api import Engine, EngineEvent, FinishEvent, Request, StepSink
from engines.engine_core import EngineCore
from engines.engine_parts import EngineOptions, Kind, KVConfig, build_core, num_kv_blocks
from engines.engine_process import ProcessCore, model_source
from engines.errors import ENGINE_FAILURE, EngineInputError
from engines.kernels import kernel_info
from engines.model.loader import LoadedModel
from engines.model_runner import ModelRunner

__all__ = ["EngineOptions", "InProcessEngine", "KVConfig", "Kind"]  # the options live in engines/engine_parts.py


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
        self.num_blocks = num_kv_blocks(loaded, options)
        self.core: EngineCore | ProcessCore
        if options.engine_process:
            self.core = ProcessCore(model_source(loaded), options)
        else:  # the loop on a thread of this process; its parts stay reachable for serve's metrics and tests
            self.core = build_core(loaded, options)
            self.scheduler = self.core.scheduler
            self.blocks = self.scheduler.blocks
            self.runner = self.core.runner
        self._streams: dict[str, asyncio.Queue[EngineEvent]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self.core.event_sink = self._from_engine_thread
        if isinstance(self.core, ProcessCore):  # each start builds a fresh core in the child: an empty cache
            await asyncio.to_thread(self.core.start)  # the first one waits for the child to load the model
        else:
            self.blocks.reset()  # every run starts with an empty prefix cache: no trial warms the next
            self.core.start()
        self._started = True

    async def stop(self) -> None:
        if self._started:
            await asyncio.to_thread(self.core.stop)
            # The sink is a method of this engine, which holds the core: a cycle that kept a run's every
            # trial's KV pool (256 MiB each) alive until the cycle collector ran. `start` sets it again.
            self.core.event_sink = lambda events: None
            self._started = False

    def set_step_sink(self, sink: StepSink | None) -> None:
        self.core.step_sink = sink

    async def reset_prefix_cache(self) -> None:
        """Forget every cached prefix (`POST /reset_prefix_cache`); blocks in use stay with their sequences."""
        if not self._started:
            if not isinstance(self.core, ProcessCore):  # a process engine's next start builds an empty cache
                self.blocks.reset()
            return
        assert self._loop is not None
        done = self._loop.create_future()
        self.core.reset_prefix_cache(lambda: self._loop.call_soon_threadsafe(done.set_result, None))  # type: ignore[union-attr]
        await done

    def kv_blocks_used(self) -> int:
        """KV blocks held now (a process engine: as of its last published step or event)."""
        if isinstance(self.core, ProcessCore):
            return self.core.kv_blocks_used
        return self.blocks.num_used

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
        need = -(-(n + request.max_tokens) // self.options.kv.block_size)
        if need > self.num_blocks:
            raise EngineInputError(
                f"request {rid}: needs {need} KV blocks, the pool has {self.num_blocks} (raise --kv-memory-mb)"
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
            "kv_blocks": self.num_blocks,
            "kv_bytes_per_token": ModelRunner.kv_bytes_per_token(self.loaded.model),
            "attention": self.core.attention_backend
            if isinstance(self.core, ProcessCore)
            else self.runner.attention_backend,
            "engine_loop": "process" if isinstance(self.core, ProcessCore) else "thread",
            "kernel": kernel_info(),
            "torch_threads": compute_threads.count(),
            "model": self.loaded.describe(),
        }
