"""What the HTTP path itself costs: `batchmark serve`'s app around a zero-latency engine, driven by the
HTTP engine, against the same engine in process. No model runs, so this is the transport alone
(aiohttp client and server, SSE framing, detokenization): the stated bound is 3 ms of median TTFT
(measured ~0.9 ms on a busy 2-core machine). A speed target, so a benchmark: `make bench`."""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest
from transformers import AutoTokenizer

from engines.api import Engine, FinishEvent, Request, TokenEvent
from engines.http import HttpEngine
from engines.model.embedded import TOKENIZER_DIR
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from engines.zero_engine import ZeroLatencyEngine

pytestmark = pytest.mark.bench

TRANSPORT_TTFT_LIMIT_S = 0.003
REQUESTS = 150


async def ttfts(engine: Engine) -> list[float]:
    await engine.start()
    out = []
    try:
        for i in range(REQUESTS):
            sent = time.perf_counter()
            first = None
            async for event in engine.generate(Request(f"r{i}", list(range(3, 131)), 16, ignore_eos=True)):
                if first is None and isinstance(event, TokenEvent):
                    first = event.time
                if isinstance(event, FinishEvent):
                    assert event.reason == "length" and event.output_tokens == 16
            assert first is not None
            out.append(first - sent)
    finally:
        await engine.stop()
    return out


def test_transport_overhead_is_small():
    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    with BackgroundServer(lambda: make_app(ZeroLatencyEngine(), tokenizer, "zero")) as server:
        remote = asyncio.run(ttfts(HttpEngine(server.url, "zero")))
    local = asyncio.run(ttfts(ZeroLatencyEngine()))
    extra = statistics.median(remote) - statistics.median(local)
    print(f"\ntransport TTFT overhead: median {extra * 1e3:.3f} ms over {REQUESTS} sequential requests")
    assert extra <= TRANSPORT_TTFT_LIMIT_S
