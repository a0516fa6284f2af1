"""A misbehaving OpenAI-compatible server for the HTTP engine's fault tests.

The prompt text picks the behaviour (`"mode"`; a token-id prompt means "ok"):
ok, split (events cut into 7-byte writes), multi (several tokens per chunk with token_ids),
usage_only (one chunk carrying three tokens, counts only in usage), status500, status429, stall
(two tokens, then silence), disconnect (two tokens, then the socket closes), malformed (a token,
then a non-JSON event), bad_shape (choices is not a list), error_event (an in-stream error object),
nodone (the stream ends with neither finish_reason nor [DONE]), slow_first (no headers for 1 s),
slow_ok (headers after 0.05 s, then fine), trickle (a token every 0.1 s, up to 100), garbage (no HTTP),
huge (one 3 MiB event), usage_liar (two tokens, then usage claiming 3,000,000), usage_liar_running (the
claim as a running total on a content chunk), plain_json (a whole JSON body instead of a stream), list_finish
(a list as finish_reason), string_ids (strings in token_ids).
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

SLOW_FIRST_S = 1.0


def _event(text: str, finish: str | None = None, **extra) -> bytes:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, **extra}
    return b"data: " + json.dumps({"id": "x", "object": "text_completion", "choices": [choice]}).encode() + b"\n\n"


def _usage(prompt: int, completion: int) -> bytes:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return b"data: " + json.dumps({"id": "x", "choices": [], "usage": usage}).encode() + b"\n\n"


def _normal(n: int) -> list[bytes]:
    return [*(_event(f" w{i}") for i in range(n)), _event("", "length"), _usage(3, n), b"data: [DONE]\n\n"]


async def completions(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    prompt = body.get("prompt")
    mode = prompt if isinstance(prompt, str) else "ok"
    n = int(body.get("max_tokens", 4))
    if mode == "status500":
        return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=500)
    if mode == "status429":
        return web.json_response({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "2"})
    if mode == "plain_json":  # stream=true ignored: one JSON answer
        choice = {"index": 0, "text": " a b", "finish_reason": "length"}
        usage = {"prompt_tokens": 3, "completion_tokens": 2}
        return web.json_response({"id": "x", "choices": [choice], "usage": usage})
    if mode == "garbage":  # not HTTP at all
        assert request.transport is not None
        request.transport.write(b"SPEAKING NONSENSE\r\n\r\n")
        request.transport.close()
        await asyncio.sleep(0.1)
        return web.Response()
    if mode == "slow_first":
        await asyncio.sleep(SLOW_FIRST_S)
    if mode == "slow_ok":
        await asyncio.sleep(0.05)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    if mode == "split":  # every event cut across writes, and writes that hold the end of one event and the next
        data = b"".join(_normal(n))
        for i in range(0, len(data), 7):
            await response.write(data[i : i + 7])
            await asyncio.sleep(0)
    elif mode == "multi":
        await response.write(_event(" a b c", token_ids=[5, 6, 7]) + _event(" d", token_ids=[8]))
        await response.write(_event("", "length", token_ids=[]) + _usage(3, 4) + b"data: [DONE]\n\n")
    elif mode == "huge":  # one 3 MiB event, as a long context's echo or a giant token might make
        await response.write(_event("x" * (3 * 2**20)) + _event("", "length") + _usage(3, 1) + b"data: [DONE]\n\n")
    elif mode == "usage_liar":
        await response.write(_event(" a") + _event(" b") + _event("", "length") + _usage(3, 3_000_000))
        await response.write(b"data: [DONE]\n\n")
    elif mode == "usage_liar_running":
        claim = b', "usage": {"prompt_tokens": 3, "completion_tokens": 3000000}}'
        await response.write(_event(" a")[:-3] + claim + b"\n\n" + _event("", "length") + b"data: [DONE]\n\n")
    elif mode == "list_finish":
        await response.write(_event(" a") + _event("", ["stop"]) + b"data: [DONE]\n\n")
    elif mode == "string_ids":
        await response.write(_event(" a", token_ids=["x"]) + _event("", "length") + b"data: [DONE]\n\n")
    elif mode == "usage_only":
        await response.write(_event(" a b c") + _event("", "stop") + _usage(3, 3) + b"data: [DONE]\n\n")
    elif mode in ("stall", "disconnect", "malformed", "bad_shape", "error_event", "nodone"):
        await response.write(_event(" a") + _event(" b"))
        if mode == "stall":
            await asyncio.sleep(30)  # the client gives up long before; its disconnect cancels this
        elif mode == "disconnect":
            assert request.transport is not None
            request.transport.close()
            return response
        elif mode == "malformed":
            await response.write(b"data: {not json\n\n")
        elif mode == "bad_shape":
            await response.write(b'data: {"choices": "nope"}\n\n')
        elif mode == "error_event":
            await response.write(b'data: {"error": {"message": "engine died", "code": 500}}\n\n')
    elif mode == "trickle":
        for i in range(100):
            await response.write(_event(f" t{i}"))
            await asyncio.sleep(0.1)
    else:  # ok, slow_ok, slow_first (if the client is patient)
        for event in _normal(n):
            await response.write(event)
    await response.write_eof()
    return response


def make_faulty_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app
