"""A zero-latency `batchmark serve` whose /metrics answers what a test scripts, and the `run` that scrapes it:
for the tests of scraped server counters behind a router (issue #35)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aiohttp import web


def embedded_tokenizer():
    from transformers import AutoTokenizer

    from engines.model.embedded import TOKENIZER_DIR

    return AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)


def scripted_metrics_app(
    tokenizer, metrics: Callable[[], str], replica_id: str | None = None
) -> Callable[[], web.Application]:
    """A factory for BackgroundServer: the zero engine served as usual, but each GET /metrics answers
    `metrics()` (called once per scrape) as Prometheus text."""
    from engines.serve import make_app
    from engines.zero_engine import ZeroLatencyEngine

    @web.middleware
    async def scripted(request: web.Request, handler):
        if request.path != "/metrics":
            return await handler(request)
        return web.Response(text=metrics(), content_type="text/plain")

    def app() -> web.Application:
        application = make_app(ZeroLatencyEngine(), tokenizer, "batchmark", replica_id=replica_id)
        application.middlewares.insert(0, scripted)
        return application

    return app


def scraped_run_argv(out: Path, engine: str, requests: int) -> list[str]:
    """`batchmark run` of chat-small against `engine`, its server scraped every 50 ms."""
    return [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        str(requests),
        "--rate",
        "20",
        "--engine",
        engine,
        "--scrape-interval-ms",
        "50",
        "--out",
        str(out),
        "--no-report",
        "--seed",
        "1",
    ]
