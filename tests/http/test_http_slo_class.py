"""A classed request reaches an HTTP target with its class: vLLM's `priority` field and the `--class-header`."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from engines.api import Request
from engines.http import HttpEngine
from engines.serve.background import BackgroundServer

SEEN: list[tuple[dict, dict]] = []  # (headers, body) of each request the server got


def _app() -> web.Application:
    async def completions(request: web.Request) -> web.StreamResponse:
        SEEN.append((dict(request.headers), await request.json()))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        choice = {"index": 0, "text": " a", "logprobs": None, "finish_reason": "length"}
        await response.write(b"data: " + json.dumps({"id": "x", "choices": [choice]}).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


def test_class_header_and_priority_are_sent_only_for_classed_requests() -> None:
    async def go(url: str) -> None:
        engine = HttpEngine(url, "m", prompt_format="text", class_header="X-SLO-Class")
        await engine.start()
        try:
            for req in (
                Request("a", [1], 1, prompt_text="hi", slo_class="batch", priority=1),
                Request("b", [1], 1, prompt_text="hi"),
            ):
                [event async for event in engine.generate(req)]
        finally:
            await engine.stop()
        assert engine.describe()["options"]["class_header"] == "X-SLO-Class"  # in the manifest's engine entry

    SEEN.clear()
    with BackgroundServer(_app) as server:
        asyncio.run(go(server.url))
    (classed_headers, classed_body), (plain_headers, plain_body) = SEEN
    assert classed_headers["X-SLO-Class"] == "batch" and classed_body["priority"] == 1
    assert "X-SLO-Class" not in plain_headers and "priority" not in plain_body


def test_serve_reads_the_priority_field_and_refuses_a_bad_one() -> None:
    import pytest

    from engines.serve.errors import ApiError
    from engines.serve.protocol import parse_completions

    assert parse_completions({"model": "m", "prompt": "x", "priority": 2}, "m").priority == 2
    assert parse_completions({"model": "m", "prompt": "x"}, "m").priority == 0
    for bad in ("high", 1.5, True):
        with pytest.raises(ApiError, match="priority"):
            parse_completions({"model": "m", "prompt": "x", "priority": bad}, "m")
