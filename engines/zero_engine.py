"""A zero-latency engine: every token exists the instant it is asked for.

It lets the harness measure itself (schedule lag, record overhead) with nothing else in the way. A request's
first `reasoning_tokens` tokens are emitted as reasoning, so the reasoning metrics can be checked without a model.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from engines.api import AdmitEvent, Engine, EngineEvent, FinishEvent, Request, TokenEvent, is_reasoning


class ZeroLatencyEngine(Engine):
    """Every token the instant it is asked for: what is measured is the harness itself."""

    def __init__(self, name: str = "zero") -> None:
        self.name = name

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def generate(self, request: Request) -> AsyncIterator[EngineEvent]:
        if request.max_tokens <= 0:
            message = f"request {request.request_id}: max_tokens={request.max_tokens} must be > 0"
            yield FinishEvent(
                request.request_id,
                "error",
                len(request.prompt_token_ids),
                0,
                time.perf_counter(),
                error_type="invalid_request",
                error_message=message,
            )
            return
        now = time.perf_counter()
        yield AdmitEvent(request.request_id, now)
        rid = request.request_id
        for index in range(request.max_tokens):
            yield TokenEvent(rid, 3 + index % 100, index, time.perf_counter(), is_reasoning(request, index))
        n = len(request.prompt_token_ids)
        yield FinishEvent(request.request_id, "length", n, request.max_tokens, time.perf_counter())

    async def abort(self, request_id: str) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "zero", "options": {}}
