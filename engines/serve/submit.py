"""One request's life in the engine, with the server's accounting around it.

Whatever ends the handler (the stream finished, the client disconnected and aiohttp cancelled the
handler, a write failed), leaving this generator aborts the sequence if it has not finished, so
its KV blocks go back to the pool at the engine's next step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from engines.api import AdmitEvent, EngineEvent, FinishEvent, Request, TokenEvent
from engines.serve.state import ServerState


async def submit(state: ServerState, request: Request, t_arrival: float) -> AsyncIterator[EngineEvent]:
    metrics = state.metrics
    engine = state.engine
    metrics.waiting += 1
    state.enter()
    admitted = finished = False
    events = engine.generate(request)
    try:
        async for event in events:
            kind = type(event)
            if kind is TokenEvent:
                metrics.generation_tokens += 1
                if event.index == 0:  # type: ignore[union-attr]
                    metrics.ttft_seconds.observe(event.time - t_arrival)
            elif kind is AdmitEvent:
                if not admitted:
                    admitted = True
                    metrics.waiting -= 1
                    metrics.running += 1
                    metrics.prompt_tokens += len(request.prompt_token_ids)
            elif kind is FinishEvent:
                finished = True
                reason = event.reason  # type: ignore[union-attr]
                metrics.finished[reason] = metrics.finished.get(reason, 0) + 1
            yield event
    finally:
        if admitted:
            metrics.running -= 1
        else:
            metrics.waiting -= 1
        state.leave()
        if not finished:
            metrics.finished["abort"] = metrics.finished.get("abort", 0) + 1
            try:
                await engine.abort(request.request_id)
            finally:
                await events.aclose()
