"""The zero-delay server's request read deadline (the one `batchmark serve` keeps, engines/serve/read_deadline.py):
a head trickled or a body owed past it gets 408 and a close; idle time between requests and a stream longer than
the deadline do not count, and a head begun behind a stream lets the stream end whole before the close. Time bounds
are upper bounds several times the deadline: the machine is loaded."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from engines.serve import zero_server
from engines.serve.zero_server import start_zero_server

DEADLINE_S = 0.3
WITHIN_S = 8.0  # the deadline, plus a loaded 2-core machine's margin: an upper bound, never a tight one
TOKEN_DELAY_S = 0.05  # a streamed request of 20 tokens takes about 1 s: longer than the deadline
HEAD = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def _completion(tokens: int, stream: bool = False) -> bytes:
    body = json.dumps({"prompt": "a b", "max_tokens": tokens, "stream": stream}).encode()
    return HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _on_server(talk):
    server = await start_zero_server(token_delay_s=TOKEN_DELAY_S, read_timeout_s=DEADLINE_S)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await talk(reader, writer)
        finally:
            writer.close()
    finally:
        server.close()
        await server.wait_closed()


async def _to_the_close(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), WITHIN_S)  # everything until the server closes


def _run(talk) -> tuple[bytes, float]:
    """What the server sent until it closed, and the seconds from the first byte sent."""

    async def timed(reader, writer):
        start = time.monotonic()
        reply = await talk(reader, writer)
        return reply, time.monotonic() - start

    return asyncio.run(_on_server(timed))


def _assert_408(reply: bytes, took: float) -> None:
    assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
    assert json.loads(reply.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_timeout", reply
    assert DEADLINE_S <= took < WITHIN_S, took


def test_a_head_trickled_past_the_deadline_gets_408_and_a_close():
    """A byte every 20 ms keeps coming: the deadline counts from the first, not from the latest."""

    async def talk(reader, writer):
        async def trickle():
            for byte in HEAD + b"X-Slow: " + b"a" * 1000:
                writer.write(bytes([byte]))
                await asyncio.sleep(0.02)

        sending = asyncio.create_task(trickle())
        try:
            return await _to_the_close(reader)
        finally:
            sending.cancel()

    _assert_408(*_run(talk))


def test_a_body_owed_after_its_head_gets_408_and_a_close():
    async def talk(reader, writer):
        writer.write(HEAD + b"Content-Length: 100\r\n\r\n{")
        return await _to_the_close(reader)

    _assert_408(*_run(talk))


def test_idle_time_and_a_long_stream_do_not_count_and_a_head_behind_the_stream_waits_for_it():
    async def talk(reader, writer):
        writer.write(_completion(2))
        first = await reader.readuntil(b'"usage"')
        await reader.readuntil(b"}}")
        await asyncio.sleep(DEADLINE_S * 3)  # idle between requests
        writer.write(_completion(2))
        second = await reader.readuntil(b'"usage"')
        await reader.readuntil(b"}}")
        # a stream of about 1 s, and behind it a head that never ends: the stream is written whole, then the close
        writer.write(_completion(20, stream=True) + HEAD[:20])
        return first, second, await _to_the_close(reader)

    (first, second, streamed), took = _run(talk)
    assert first.startswith(b"HTTP/1.1 200 ") and second.startswith(b"HTTP/1.1 200 "), (first, second)
    assert streamed.startswith(b"HTTP/1.1 200 ") and streamed.count(b"data: {") == 21, streamed[-300:]
    assert streamed.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n") and b" 408 " not in streamed, streamed[-300:]
    assert took > DEADLINE_S * 3 + 19 * TOKEN_DELAY_S, took


@pytest.mark.parametrize("value", ["0", "nan"])
def test_a_bad_deadline_is_one_line_and_exit_2(capsys, value):
    assert zero_server.main(["--request-read-timeout", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--request-read-timeout {value}: must be" in err, err
