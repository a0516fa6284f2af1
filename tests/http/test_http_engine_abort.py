"""The HTTP engine's abort reaches the server: the stream closes, the sequence is aborted, KV is freed."""

from __future__ import annotations

import asyncio
import time

from engines.api import Request, TokenEvent
from engines.http import HttpEngine
from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from engines.serve.state import STATE

MODEL = "abort-model"


def test_http_abort_frees_the_servers_kv(embedded):
    """The HTTP engine's abort closes the stream; the server aborts the sequence and frees its blocks."""
    options = EngineOptions(kind="continuous", kv=KVConfig(memory_mb=32))
    with BackgroundServer(lambda: make_app(InProcessEngine(embedded, options), embedded.tokenizer, MODEL)) as server:
        state = server.app[STATE]
        blocks = state.engine.blocks  # type: ignore[attr-defined]

        async def go():
            engine = HttpEngine(server.url, MODEL)
            await engine.start()
            try:
                events = []
                async for event in engine.generate(Request("long", list(range(5, 40)), 2000, ignore_eos=True)):
                    events.append(event)
                    if isinstance(event, TokenEvent) and event.index == 4:
                        assert blocks.num_used > 0
                        await engine.abort("long")
                return events
            finally:
                await engine.stop()

        events = asyncio.run(go())
        assert events[-1].reason == "abort"
        for _ in range(500):
            if blocks.num_used == 0 and state.metrics.finished.get("abort") == 1:
                break
            time.sleep(0.01)
        assert blocks.num_used == 0 and state.metrics.finished.get("abort") == 1
        assert state.metrics.generation_tokens < 2000
