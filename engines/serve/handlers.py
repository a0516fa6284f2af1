"""The HTTP endpoints: completions and chat (streaming and not), models, health, metrics, and
`POST /reset_prefix_cache` (as vLLM has): the next request finds no cached prefix."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from aiohttp import web

from engines.api import REPLICA_HEADER, SERVER_TIMING_FIELD, AdmitEvent, EngineEvent, FinishEvent, Request, TokenEvent
from engines.errors import EngineInputError
from engines.serve.detokenize import IncrementalDetokenizer
from engines.serve.errors import ApiError, invalid
from engines.serve.protocol import GenerationParams, parse_chat, parse_completions
from engines.serve.state import STATE, ServerState
from engines.serve.submit import Place, submit
from engines.serve.timing import RequestTiming

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

DONE = b"data: [DONE]\n\n"
INLINE_JSON_BYTES = 2**20
log = logging.getLogger("batchmark.serve")


async def completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "completions")


async def chat_completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "chat")


async def models(request: web.Request) -> web.Response:
    state = request.app[STATE]
    card: dict[str, Any] = {
        "id": state.model_name,
        "object": "model",
        "created": state.created,
        "owned_by": "batchmark",
    }
    max_context = getattr(state.engine, "max_context", None)
    if max_context:
        card["max_model_len"] = max_context
    return web.json_response({"object": "list", "data": [card]})


async def health(request: web.Request) -> web.Response:
    state = request.app[STATE]
    failure = getattr(getattr(state.engine, "core", None), "error", None)
    if failure is not None:
        return web.json_response({"status": "failed", "error": f"{type(failure).__name__}: {failure}"}, status=503)
    if state.draining:
        return web.json_response({"status": "draining", "in_flight": state.in_flight}, status=503)
    return web.json_response({"status": "ok"})


async def get_load(request: web.Request) -> web.Response:
    """The load a router polls (sglang-router's and vllm-router's `/get_load` shape: one entry per data-parallel
    rank, here one): requests computing and queued, and the KV tokens in use (vllm-router's power_of_two adds
    `num_tokens` to its own in-flight count). An engine without a KV pool reports the requests' count there."""
    state = request.app[STATE]
    m = state.metrics
    tokens = m.kv_tokens_used()
    if tokens is None:
        tokens = m.running + m.waiting
    load = {"dp_rank": 0, "num_reqs": m.running + m.waiting, "num_waiting_reqs": m.waiting, "num_tokens": tokens}
    return web.json_response([load])


async def reset_prefix_cache(request: web.Request) -> web.Response:
    reset = getattr(request.app[STATE].engine, "reset_prefix_cache", None)
    if reset is None:
        raise ApiError(404, "this engine has no prefix cache", code="not_found")
    await reset()
    return web.json_response({"reset": True})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[STATE].metrics.render().encode()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


# -- generation ---------------------------------------------------------------------------------
async def _generate(http: web.Request, api: str) -> web.StreamResponse:
    t_arrival = time.perf_counter()
    state = http.app[STATE]
    if state.draining:
        raise ApiError(503, "the server is shutting down", code="shutting_down", headers={"Connection": "close"})
    body = await _read_json(http, state)
    params = parse_completions(body, state.model_name) if api == "completions" else parse_chat(body, state.model_name)
    if params.prompt_ids is not None:
        prompt = params.prompt_ids
    else:
        prompt = await state.prompts.ids(text=params.prompt_text, messages=params.messages)
    max_tokens = params.max_tokens or state.default_max_tokens
    rid = state.new_id("cmpl" if api == "completions" else "chatcmpl")
    request = Request(
        rid,
        prompt,
        max_tokens,
        ignore_eos=params.ignore_eos,
        stop_token_ids=params.stop_token_ids,
        priority=params.priority,
        reasoning_tokens=params.reasoning_tokens,
    )
    _check_fits(state, request)
    if state.metrics.waiting >= state.max_waiting:
        raise ApiError(
            429,
            f"the waiting queue is full ({state.max_waiting} requests); retry later",
            code="queue_full",
            headers={"Retry-After": str(state.retry_after_s)},
        )
    place = Place(state)  # no await between the check and this: the limit is exact
    try:
        chunks = _Chunks(rid, state.model_name, state.created, params)
        if params.stream:
            return await _stream(http, state, request, chunks, t_arrival, place)
        return await _complete(state, request, chunks, t_arrival, place)
    finally:
        place.release()


async def _stream(
    http: web.Request, state: ServerState, request: Request, chunks: _Chunks, t_arrival: float, place: Place
) -> web.StreamResponse:
    async with aclosing(submit(state, request, t_arrival, place)) as events:
        # With admission control a request may be shed before it is queued: look at its first event before
        # the 200 goes out, so a shed request gets its 429. (Headers then wait for the admission.)
        first = await anext(events) if _admission_on(state) else None
        if type(first) is FinishEvent and first.error_type == "slo_shed":
            raise _shed(first)
        response = web.StreamResponse(headers={**SSE_HEADERS, **_replica(state)})
        try:
            await response.prepare(http)
            await _send_events(response, state, chunks, _then(first, events), RequestTiming(t_arrival))
        except ConnectionResetError:  # aiohttp's ClientConnectionResetError is one: the client went away
            # an ordinary event (the sequence is aborted as the stream closes), not a fault: no traceback
            log.debug("%s: the client disconnected mid-stream", request.request_id)
    return response


async def _send_events(
    response: web.StreamResponse,
    state: ServerState,
    chunks: _Chunks,
    events: AsyncIterator[EngineEvent],
    timing: RequestTiming,
) -> None:
    detok = IncrementalDetokenizer(state.tokenizer)
    async for event in events:
        if type(event) is TokenEvent:
            if timing.t_first_token is None:
                timing.t_first_token = event.time
            await response.write(chunks.token(detok.step(event.token_id), event.token_id, event.reasoning))
        elif type(event) is AdmitEvent:
            if timing.t_admitted is None:
                timing.t_admitted = event.time
        elif type(event) is FinishEvent:
            if event.reason == "error":
                tail = chunks.error(event)
            else:
                # the server's timing rides the stream's last chunk (the usage chunk when asked for, as vLLM's
                # `metrics` does): a client that does not know the field ignores it (engines/api.py)
                said = timing.field()
                if chunks.params.include_usage:
                    tail = chunks.finish(detok.flush(), event.reason)
                    tail += chunks.usage(event.prompt_tokens, event.output_tokens, event.cached_tokens, said)
                else:
                    tail = chunks.finish(detok.flush(), event.reason, said)
            await response.write_eof(tail + DONE)  # one write: the client can reuse the connection at once


async def _complete(
    state: ServerState, request: Request, chunks: _Chunks, t_arrival: float, place: Place
) -> web.Response:
    ids: list[int] = []
    thought = 0  # reasoning tokens: a request's first ones (`Request.reasoning_tokens`)
    finish: FinishEvent | None = None
    timing = RequestTiming(t_arrival)
    async with aclosing(submit(state, request, t_arrival, place)) as events:
        async for event in events:
            if type(event) is TokenEvent:
                if timing.t_first_token is None:
                    timing.t_first_token = event.time
                ids.append(event.token_id)
                thought += event.reasoning
            elif type(event) is AdmitEvent:
                if timing.t_admitted is None:
                    timing.t_admitted = event.time
            elif type(event) is FinishEvent:
                finish = event
    assert finish is not None  # the engine contract: the last event is always a finish
    if finish.error_type == "slo_shed":
        raise _shed(finish)
    if finish.reason == "error":
        status = 400 if finish.error_type == "invalid_request" else 500
        raise ApiError(status, finish.error_message or "generation failed", code=finish.error_type)
    decode = state.tokenizer.decode
    text = decode(ids[thought:], skip_special_tokens=True)
    reasoning = decode(ids[:thought], skip_special_tokens=True) if thought else None
    body = chunks.complete(text, ids, finish, reasoning)
    if (said := timing.field()) is not None:
        body[SERVER_TIMING_FIELD] = said
    return web.json_response(body, headers=_replica(state))


# -- helpers ------------------------------------------------------------------------------------
def _replica(state: ServerState) -> dict[str, str]:
    return {REPLICA_HEADER: state.replica_id} if state.replica_id else {}


def _admission_on(state: ServerState) -> bool:
    options = getattr(state.engine, "options", None)
    return getattr(getattr(options, "continuous", None), "admission", None) is not None


def _shed(finish: FinishEvent) -> ApiError:
    """429 with Retry-After: admission control predicted this request would miss its TTFT SLO."""
    retry = max(1, math.ceil(finish.retry_after_s or 1.0))
    return ApiError(
        429,
        finish.error_message or "shed by admission control; retry later",
        code="slo_shed",
        headers={"Retry-After": str(retry)},
    )


async def _then(first: EngineEvent | None, events: AsyncIterator[EngineEvent]) -> AsyncIterator[EngineEvent]:
    if first is not None:
        yield first
    async for event in events:
        yield event


async def _read_json(http: web.Request, state: ServerState) -> dict[str, Any]:
    too_big = ApiError(
        413,
        f"the request body exceeds {state.max_body_bytes} bytes",
        code="body_too_large",
        headers={"Connection": "close"},
    )
    if http.content_length is not None and http.content_length > state.max_body_bytes:
        raise too_big
    try:
        raw = await http.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_big from None
    try:
        if len(raw) > INLINE_JSON_BYTES:  # a big body parses on a thread, so the loop keeps answering between
            body = await asyncio.to_thread(json.loads, raw)
        else:
            body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise invalid("body", f"is not valid JSON ({exc})") from None
    except RecursionError:  # `[` x 100000: nesting deeper than any request body needs
        raise invalid("body", "is nested too deeply") from None
    if not isinstance(body, dict):
        raise invalid("body", "must be a JSON object")
    return body


def _check_fits(state: ServerState, request: Request) -> None:
    """Refuse what the engine could never serve with a 400 naming the field, before any streaming."""
    vocab = getattr(state.engine, "vocab_size", None)
    if vocab is not None:
        bad = next((t for t in request.prompt_token_ids if t >= vocab), None)
        if bad is not None:
            raise invalid("prompt", f"token id {bad} is outside the vocabulary 0..{vocab - 1}")
        bad = next((t for t in request.stop_token_ids if t >= vocab), None)
        if bad is not None:
            raise invalid("stop_token_ids", f"token id {bad} is outside the vocabulary 0..{vocab - 1}")
    max_context = getattr(state.engine, "max_context", None)
    n = len(request.prompt_token_ids)
    if max_context is not None and n + request.max_tokens > max_context:
        raise invalid(
            "max_tokens",
            f"prompt of {n} tokens + max_tokens {request.max_tokens} exceeds the model context of {max_context}",
        )
    validate = getattr(state.engine, "validate", None)
    if validate is not None:
        try:
            validate(request)
        except EngineInputError as exc:
            raise ApiError(400, str(exc), code="invalid_value") from None


class _Chunks:
    """The JSON shapes of one response, completions or chat."""

    def __init__(self, rid: str, model: str, created: int, params: GenerationParams) -> None:
        self.rid = rid
        self.model = model
        self.created = created
        self.params = params
        self.chat = params.api == "chat"
        self.object = "chat.completion.chunk" if self.chat else "text_completion"
        self.ids = params.return_token_ids
        self._first = True

    def _choice(
        self, text: str, token_ids: list[int] | None, finish_reason: str | None, reasoning: bool = False
    ) -> dict[str, Any]:
        # reasoning text goes under vLLM's `reasoning_content`, in the delta (chat) or the choice (completions)
        if self.chat:
            key = "reasoning_content" if reasoning else "content"
            # a reasoning token always names its channel, even with no text yet (its bytes end a character later)
            delta: dict[str, str] = {key: text} if text or reasoning or self._first else {}
            if self._first:
                delta = {"role": "assistant", **delta}
                self._first = False
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        elif reasoning:
            choice = {"index": 0, "text": "", "reasoning_content": text, "logprobs": None, "finish_reason": None}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        if self.ids and token_ids is not None:
            choice["token_ids"] = token_ids
        return choice

    def _event(self, payload: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        return self._event(
            {
                "id": self.rid,
                "object": self.object,
                "created": self.created,
                "model": self.model,
                "choices": choices,
                **extra,
            }
        )

    def token(self, text: str, token_id: int, reasoning: bool = False) -> bytes:
        return self._chunk([self._choice(text, [token_id], None, reasoning)])

    def finish(self, text: str, reason: str, timing: dict[str, Any] | None = None) -> bytes:
        extra = {} if timing is None else {SERVER_TIMING_FIELD: timing}
        return self._chunk([self._choice(text, [], reason)], **extra)

    def usage(self, prompt: int, output: int, cached: int | None, timing: dict[str, Any] | None = None) -> bytes:
        extra = {} if timing is None else {SERVER_TIMING_FIELD: timing}
        return self._chunk([], usage=_usage(prompt, output, cached), **extra)

    def error(self, event: FinishEvent) -> bytes:
        status = 400 if event.error_type == "invalid_request" else 500
        error = ApiError(status, event.error_message or "generation failed", code=event.error_type)
        return self._event(error.body())

    def complete(self, text: str, ids: list[int], finish: FinishEvent, reasoning: str | None = None) -> dict[str, Any]:
        extra = {} if reasoning is None else {"reasoning_content": reasoning}
        if self.chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text, **extra},
                "logprobs": None,
                "finish_reason": finish.reason,
            }
        else:
            choice = {"index": 0, "text": text, **extra, "logprobs": None, "finish_reason": finish.reason}
        if self.ids:
            choice["token_ids"] = ids
        return {
            "id": self.rid,
            "object": "chat.completion" if self.chat else "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": _usage(finish.prompt_tokens, finish.output_tokens, finish.cached_tokens),
        }


def _usage(prompt: int, output: int, cached: int | None) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
    if cached is not None:  # OpenAI's and vLLM's field for prompt tokens served from the prefix cache
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage
