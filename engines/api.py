"""The one engine interface the load generator sees (MLPerf LoadGen style: it knows nothing else).

An engine takes `Request`s and streams `EngineEvent`s back per request: an `AdmitEvent` when the
scheduler first gives the request compute, a `TokenEvent` for every output token (with the time the
token existed), and exactly one `FinishEvent`. Engines run their model loop off the asyncio event
loop so that token timestamps are not delayed by the load generator's own work.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

FinishReason = Literal["stop", "length", "abort", "error"]


@dataclass(frozen=True)
class Request:
    request_id: str
    prompt_token_ids: Sequence[int]
    max_tokens: int
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()
    tenant: str = "default"
    priority: int = 0  # lower value = more urgent, as in vLLM
    arrival_time: float | None = None  # scheduled arrival on the caller's clock; policies may use it
    prompt_text: str | None = None  # for engines that take text (HTTP targets)


@dataclass(frozen=True)
class AdmitEvent:
    request_id: str
    time: float


@dataclass(frozen=True)
class TokenEvent:
    request_id: str
    token_id: int
    index: int  # 0-based position in the output
    time: float


@dataclass(frozen=True)
class FinishEvent:
    request_id: str
    reason: FinishReason
    prompt_tokens: int
    output_tokens: int
    time: float
    preemptions: int = 0
    error_type: str | None = None
    error_message: str | None = None


EngineEvent = AdmitEvent | TokenEvent | FinishEvent
StepSink = Callable[[dict[str, Any]], None]


@dataclass
class EngineInfo:
    """What an engine says about itself for the run manifest."""

    kind: str
    config: dict[str, Any] = field(default_factory=dict)


class Engine(abc.ABC):
    """Async engine. `start()` before submitting, `stop()` when done."""

    name: str = "engine"

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def stop(self) -> None: ...

    @abc.abstractmethod
    def generate(self, request: Request) -> AsyncIterator[EngineEvent]:
        """Submit `request` and stream its events; the last one is always a `FinishEvent`."""

    @abc.abstractmethod
    async def abort(self, request_id: str) -> None: ...

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """The engine's full configuration, for the run manifest."""

    def set_step_sink(self, sink: StepSink | None) -> None:  # noqa: B027  engines without steps ignore it
        """Receive one dict per engine step (the step trace). Called from the engine's thread."""

    def clock(self) -> Callable[[], float]:
        """The clock event times are on. In-process engines share `time.perf_counter`."""
        import time

        return time.perf_counter
