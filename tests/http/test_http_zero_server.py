"""The zero-delay server speaks enough OpenAI for the HTTP engine and plain clients."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from engines.api import REPLICA_HEADER, SERVER_TIMING_FIELD, FinishEvent, Request, TokenEvent
from engines.http import HttpEngine
from engines.serve import zero_server
from engines.serve.zero_server import start_zero_server


async def _with_server(delay_s: float, body):
    server = await start_zero_server(token_delay_s=delay_s)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        return await body(url)
    finally:
        server.close()
        await server.wait_closed()


def test_engine_against_zero_server_both_apis():
    async def body(url):
        out = {}
        for api in ("completions", "chat"):
            engine = HttpEngine(url, "zero", api=api, return_token_ids=True, prompt_format="auto")
            await engine.start()
            try:
                req = Request(f"{api}-1", list(range(3, 40)), 12, ignore_eos=True, prompt_text="hello there")
                out[api] = [e async for e in engine.generate(req)]
            finally:
                await engine.stop()
        return out

    out = asyncio.run(_with_server(0.0, body))
    for api, events in out.items():
        tokens = [e for e in events if isinstance(e, TokenEvent)]
        assert [t.token_id for t in tokens] == [3 + i for i in range(12)], api
        finish = events[-1]
        assert isinstance(finish, FinishEvent) and finish.reason == "length" and finish.output_tokens == 12
    assert out["completions"][-1].prompt_tokens == 37  # usage counts the token-id prompt


def test_token_delay_spaces_the_stream():
    async def body(url):
        engine = HttpEngine(url, "zero")
        await engine.start()
        try:
            return [e async for e in engine.generate(Request("d", [5, 6], 5, ignore_eos=True))]
        finally:
            await engine.stop()

    events = asyncio.run(_with_server(0.02, body))
    times = [e.time for e in events if isinstance(e, TokenEvent)]
    assert len(times) == 5 and times[-1] - times[0] >= 4 * 0.02 * 0.9


def test_plain_http_answers():
    async def body(url):
        async with aiohttp.ClientSession() as session:
            whole = await session.post(url + "/v1/completions", json={"prompt": "a b", "max_tokens": 3})
            missing = await session.get(url + "/nope")
            bad = await session.post(url + "/v1/completions", data=b"{oops")
            health = await session.get(url + "/health")
            return (whole.status, json.loads(await whole.text())), missing.status, bad.status, health.status

    (status, whole), missing, bad, health = asyncio.run(_with_server(0.0, body))
    assert status == 200 and whole["usage"]["completion_tokens"] == 3 and whole["choices"][0]["text"] == " t" * 3
    assert (missing, bad, health) == (404, 400, 200)


def test_many_requests_on_few_connections_are_fast():
    """The server's own cost must stay far below the client's: 300 requests over 4 connections."""

    async def body(url):
        engine = HttpEngine(url, "zero", connections=4)
        await engine.start()
        try:

            async def one(i):
                return [e async for e in engine.generate(Request(f"r{i}", list(range(128)), 16, ignore_eos=True))][-1]

            started = time.perf_counter()
            finishes = await asyncio.gather(*(one(i) for i in range(300)))
            return finishes, time.perf_counter() - started
        finally:
            await engine.stop()

    finishes, elapsed = asyncio.run(_with_server(0.0, body))
    assert all(f.reason == "length" and f.output_tokens == 16 for f in finishes)
    assert elapsed < 10.0  # ~1 s on an idle 2-core machine; generous for a shared one


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"stream_options": 3}', b'{"max_tokens": "x"}'])
def test_a_bad_body_is_a_400_not_a_dropped_connection(body):
    async def send(url):
        async with aiohttp.ClientSession() as session:
            bad = await session.post(url + "/v1/completions", data=body)
            health = await session.get(url + "/health")  # the server is still up after it
            return bad.status, health.status

    assert asyncio.run(_with_server(0.0, send)) == (400, 200)


@pytest.mark.parametrize("delay_s", [0.0, 0.01])
@pytest.mark.parametrize("usage", [False, True])
def test_it_names_its_replica_and_times_each_request_as_batchmark_serve_does(delay_s, usage):
    """The x-batchmark-replica header (HOST:PORT by default) and `batchmark_server_timing` on the last chunk reach
    the HTTP engine's finish: the server's TTFT lies inside the client's, and its queue wait inside that."""

    async def body(url):
        engine = HttpEngine(url, "zero", include_usage=usage)
        await engine.start()
        try:
            sent = time.perf_counter()
            events = [e async for e in engine.generate(Request("t", [5, 6], 4, ignore_eos=True))]
            return url, sent, events
        finally:
            await engine.stop()

    url, sent, events = asyncio.run(_with_server(delay_s, body))
    first = next(e for e in events if isinstance(e, TokenEvent))
    finish = events[-1]
    assert isinstance(finish, FinishEvent) and finish.reason == "length" and finish.output_tokens == 4
    assert finish.replica_id == url.removeprefix("http://")
    assert finish.server_ttft_s is not None and finish.server_queue_s is not None
    assert 0 <= finish.server_queue_s <= finish.server_ttft_s <= first.time - sent


def test_a_plain_completion_carries_the_header_and_timing_and_a_given_name():
    async def body(url):
        async with aiohttp.ClientSession() as session:
            whole = await session.post(url + "/v1/completions", json={"prompt": "a b", "max_tokens": 2})
            return whole.headers.get(REPLICA_HEADER), json.loads(await whole.text())

    async def named(replica_id):
        server = await start_zero_server(replica_id=replica_id)
        try:
            return await body(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        finally:
            server.close()
            await server.wait_closed()

    header, whole = asyncio.run(named("replica-7"))
    assert header == "replica-7"
    timing = whole[SERVER_TIMING_FIELD]
    assert 0 <= timing["queue_s"] <= timing["ttft_s"] < 1.0


@pytest.mark.parametrize("bad", ["", " ", "a\nb", "é"])
def test_a_bad_replica_id_is_one_line_and_exit_2(bad, capsys):
    assert zero_server.main(["--replica-id", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "--replica-id" in err and "\n" not in err.strip()
