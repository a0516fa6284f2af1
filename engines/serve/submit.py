"""One request's life in the engine, with the server's accounting around it.

Whatever ends the handler (the stream finished, the client disconnected and aiohttp cancelled the
handler, a write failed), leaving this generator aborts the sequence if it has not finished, so
its KV blocks go back to the pool at the engine's next step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from engines.api import AdmitEvent, EngineEvent, FinishEvent, Request, TokenEvent
from engines.serve.state import ServerState


class Place:
    """A request's place in the server's queue accounting, taken before the handler's first await.

    Taking it only once the response was prepared let requests pass the `max_waiting` check while
    others were still preparing (`--max-waiting 50` admitted 51). `release` is idempotent.
    """

    __slots__ = ("admitted", "released", "state")

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.admitted = False
        self.released = False
        state.metrics.waiting += 1
        state.enter()

    def admit(self) -> None:
        if not self.admitted:
            self.admitted = True
            self.state.metrics.waiting -= 1
            self.state.metrics.running += 1

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        if self.admitted:
            self.state.metrics.running -= 1
        else:
            self.state.metrics.waiting -= 1
        self.state.leave()


async def submit(state: ServerState, request: Request, t_arrival: float, place: Place) -> AsyncIterator[EngineEvent]:
    metrics = state.metrics
    engine = state.engine
    finished = False
    events = engine.generate(request)
    try:
        async for event in events:
            kind = type(event)
            if kind is TokenEvent:
                metrics.generation_tokens += 1
                if event.index == 0:  # type: ignore[union-attr]
                    metrics.ttft_seconds.observe(event.time - t_arrival)
            elif kind is AdmitEvent:
                if not place.admitted:
                    place.admit()
                    metrics.prompt_tokens += len(request.prompt_token_ids)
            elif kind is FinishEvent:
                finished = True
                reason = event.reason  # type: ignore[union-attr]
                metrics.finished[reason] = metrics.finished.get(reason, 0) + 1
            yield event
    finally:
        place.release()
        if not finished:
            metrics.finished["abort"] = metrics.finished.get("abort", 0) + 1
            try:
                await engine.abort(request.request_id)
            finally:
                await events.aclose()
