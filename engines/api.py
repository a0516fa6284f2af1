"""The one engine interface the load generator sees (MLPerf LoadGen style: it knows nothing else).

An engine takes `Request`s and streams `EngineEvent`s back per request: an `AdmitEvent` when the
scheduler first gives the request compute, a `TokenEvent` for every output token (with the time the
token existed), and exactly one `FinishEvent`. Engines run their model loop off the asyncio event
loop so that token timestamps are not delayed by the load generator's own work.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from engines.step_record import StepRecord

FinishReason = Literal["stop", "length", "abort", "error"]


@dataclass(frozen=True)
class Request:
    """One generation request: token ids in, `max_tokens` out (exactly that many with `ignore_eos`)."""

    request_id: str
    prompt_token_ids: Sequence[int]
    max_tokens: int
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()
    tenant: str = "default"
    priority: int = 0  # lower value = more urgent, as in vLLM
    arrival_time: float | None = None  # scheduled arrival on the caller's clock; policies may use it
    prompt_text: str | None = None  # for engines that take text (HTTP targets)
    slo_class: str | None = None  # the request's SLO class: HTTP targets get it as a header (engines know no targets)
    admission_slo_s: float | None = None  # SLO-aware admission aims at this TTFT for it (None: the engine's own)
    # Synthetic reasoning: an engine that cannot reason (zero, simulated, in-process, `batchmark serve`) emits
    # its first `reasoning_tokens` output tokens as reasoning; they count against max_tokens, as in vLLM.
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class AdmitEvent:
    """The scheduler gave the request compute for the first time."""

    request_id: str
    time: float


@dataclass(frozen=True)
class TokenEvent:
    """One output token, timed when the step that produced it ended."""

    request_id: str
    token_id: int
    index: int  # 0-based position in the output
    time: float
    reasoning: bool = False  # on the reasoning channel (`reasoning_content`, `<think>`), not the answer


def is_reasoning(request: Request, index: int) -> bool:
    """Whether output token `index` of `request` is reasoning, for engines that emit it synthetically."""
    return index < request.reasoning_tokens


@dataclass(frozen=True)
class SpecDecodeCounts:
    """One request's speculative decoding, as the engine counted it (vLLM's terms): `drafts` verify steps that
    checked drafted tokens, `draft_tokens` drafted in all, `accepted_tokens` of them accepted."""

    drafts: int
    draft_tokens: int
    accepted_tokens: int


@dataclass(frozen=True)
class FinishEvent:
    """The request's last event: why it ended and the engine's own token counts."""

    request_id: str
    reason: FinishReason
    prompt_tokens: int | None  # None: the engine cannot say (an HTTP server that sent no usage)
    output_tokens: int
    time: float
    preemptions: int | None = 0  # None: the engine cannot see them (an HTTP server: the client sees no preemption)
    error_type: str | None = None
    error_message: str | None = None
    retry_after_s: float | None = None  # shed by admission control: when the queue is predicted to have room
    cached_tokens: int | None = None  # prompt tokens served from the prefix cache; None: not known
    replica: int | None = None  # a simulated cluster: the replica (0..n-1) that served it
    replica_id: str | None = None  # an HTTP server's name for itself (REPLICA_HEADER): the replica that answered
    t_prefill_end: float | None = None  # simulated P/D disaggregation: the prefill step's end
    t_kv_arrived: float | None = None  # ... and when its KV reached the decode replica
    spec_decode: SpecDecodeCounts | None = None  # None: no speculative decoding, or the engine did not say
    # an HTTP server's own timing of this request (SERVER_TIMING_FIELD): the request reaching the server -> its
    # first token, and -> its first compute (its queue wait); None: the server did not say
    server_ttft_s: float | None = None
    server_queue_s: float | None = None


# The response header naming the replica that served a completion (`batchmark serve --replica-id`): the HTTP
# engine records it per request, so a run through a router knows where each request went (docs/cluster.md)
REPLICA_HEADER = "x-batchmark-replica"

# The extension field of a streamed completion's last chunk (and of a plain completion) where `batchmark serve`
# says how long it held the request: {"ttft_s": S, "queue_s": S} (queue_s only when the engine saw the admission).
# A field of the chunk's top level that OpenAI's schema lacks: clients that do not know it ignore it (the openai
# SDK keeps it in `model_extra`), as vLLM's opt-in `metrics` object (`--enable-per-request-metrics`, vLLM PR
# #46768; docs/features/per_request_metrics.md) rides the final usage chunk with `time_to_first_token_ms` and
# `queue_time_ms`. Not vLLM's name: its TTFT counts from the request's scheduling, ours from the request reaching
# the HTTP server, so the two are not one quantity (docs/http.md).
SERVER_TIMING_FIELD = "batchmark_server_timing"

EngineEvent = AdmitEvent | TokenEvent | FinishEvent
StepSink = Callable[[StepRecord], None]


class Engine(abc.ABC):
    """The system under test, as the load generator sees it: `start()`, then `generate()` per request
    (concurrently), `abort()` to cut one short, `stop()` when done. Event times are `time.perf_counter()`
    seconds, the clock the load generator's records use."""

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
        """Receive one `StepRecord` per engine step (the step trace). Called from the engine's thread."""
