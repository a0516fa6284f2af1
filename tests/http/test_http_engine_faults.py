"""The HTTP engine against a misbehaving server: typed errors, never a crash, the run completes."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from faulty_server import make_faulty_app

from engines.api import AdmitEvent, FinishEvent, Request, TokenEvent
from engines.http import ERROR_TYPES, HttpEngine
from engines.serve.background import BackgroundServer
from harness.loadgen import Scheduled, run_open_loop

READ_TIMEOUT_S = 0.4
TOTAL_TIMEOUT_S = 2.0

# mode -> (finish reason, error type or None, output tokens)
EXPECTED = {
    "ok": ("length", None, 4),
    "slow_ok": ("length", None, 4),
    "split": ("length", None, 4),
    "multi": ("length", None, 4),
    "usage_only": ("stop", None, 3),
    "huge": ("length", None, 1),
    "status500": ("error", "http_status", 0),
    "status429": ("error", "http_status", 0),
    "stall": ("error", "timeout", 2),
    "slow_first": ("error", "timeout", 0),
    "trickle": ("error", "timeout", None),
    "disconnect": ("error", "disconnect", 2),
    "nodone": ("error", "disconnect", 2),
    "malformed": ("error", "malformed_event", 2),
    "bad_shape": ("error", "malformed_event", 2),
    "error_event": ("error", "server_error", 2),
    "garbage": ("error", "malformed_event", 0),
    "plain_json": ("error", "not_streamed", 0),
    "list_finish": ("error", "malformed_event", 1),
    "string_ids": ("error", "malformed_event", 0),
}


@pytest.fixture(scope="module")
def faulty():
    with BackgroundServer(make_faulty_app) as server:
        yield server.url


def engine(url: str, **kw) -> HttpEngine:
    options = {"timeout_s": TOTAL_TIMEOUT_S, "read_timeout_s": READ_TIMEOUT_S, "prompt_format": "text", **kw}
    return HttpEngine(url, "faulty", **options)


def request(mode: str, i: int = 0) -> Request:
    return Request(f"{mode}-{i}", [1, 2, 3], 4, prompt_text=mode)


async def collect(eng: HttpEngine, req: Request) -> list:
    return [event async for event in eng.generate(req)]


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_each_fault_is_typed(faulty, mode):
    async def go():
        eng = engine(faulty)
        await eng.start()
        try:
            return await collect(eng, request(mode))
        finally:
            await eng.stop()

    started = time.perf_counter()
    events = run(go())
    elapsed = time.perf_counter() - started
    reason, error_type, tokens = EXPECTED[mode]
    finish = events[-1]
    assert isinstance(finish, FinishEvent) and sum(isinstance(e, FinishEvent) for e in events) == 1
    assert (finish.reason, finish.error_type) == (reason, error_type), finish
    token_events = [e for e in events if isinstance(e, TokenEvent)]
    if tokens is not None:
        assert len(token_events) == tokens and finish.output_tokens == tokens
    assert [e.index for e in token_events] == list(range(len(token_events)))
    if error_type is not None:
        assert error_type in ERROR_TYPES and finish.error_message
    assert elapsed < TOTAL_TIMEOUT_S + 1.5  # every failure ends within the configured timeouts


def test_error_messages_say_what_happened(faulty):
    async def go():
        eng = engine(faulty)
        await eng.start()
        try:
            return {m: (await collect(eng, request(m)))[-1] for m in ("status500", "status429", "stall", "slow_first")}
        finally:
            await eng.stop()

    out = run(go())
    assert out["status500"].error_message.startswith("HTTP 500") and "boom" in out["status500"].error_message
    assert out["status429"].error_message.startswith("HTTP 429") and "Retry-After: 2" in out["status429"].error_message
    assert "first byte" in out["slow_first"].error_message
    assert "mid-stream" in out["stall"].error_message


def test_tokens_and_ids_from_multi_token_chunks(faulty):
    async def go():
        eng = engine(faulty)
        await eng.start()
        try:
            return await collect(eng, request("multi")), await collect(eng, request("usage_only"))
        finally:
            await eng.stop()

    multi, usage_only = run(go())
    tokens = [e for e in multi if isinstance(e, TokenEvent)]
    assert [t.token_id for t in tokens] == [5, 6, 7, 8]
    assert tokens[0].time == tokens[1].time == tokens[2].time  # one chunk, one receipt time
    counted = [e for e in usage_only if isinstance(e, TokenEvent)]
    assert len(counted) == 3 and len({t.time for t in counted}) == 1  # 1 counted + 2 from the usage numbers
    assert usage_only[-1].output_tokens == 3 and usage_only[-1].prompt_tokens == 3


@pytest.mark.parametrize("mode", ["usage_liar", "usage_liar_running"])
def test_usage_adds_at_most_max_tokens(faulty, mode):
    """A server claiming 3,000,000 tokens after streaming two gets max_tokens events, never millions; the
    claim stays in the finish event, where run validity flags it."""

    async def go():
        eng = engine(faulty)
        await eng.start()
        try:
            return await collect(eng, request(mode))
        finally:
            await eng.stop()

    started = time.perf_counter()
    events = run(go())
    assert time.perf_counter() - started < 2.0
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert len(tokens) == 4  # the request's max_tokens
    assert events[-1].reason == "length" and events[-1].output_tokens == 3_000_000


def test_connect_error_is_typed():
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def go():
        eng = engine(f"http://127.0.0.1:{port}")
        await eng.start()
        try:
            return await collect(eng, request("ok"))
        finally:
            await eng.stop()

    events = run(go())
    assert len(events) == 1 and events[0].reason == "error" and events[0].error_type == "connect"


def test_abort_mid_stream_and_before_headers(faulty):
    async def go():
        eng = engine(faulty, timeout_s=30, read_timeout_s=None)
        await eng.start()
        try:
            trickle, slow = request("trickle"), request("slow_first")

            async def abort_after_tokens():
                events = []
                async for event in eng.generate(trickle):
                    events.append(event)
                    if isinstance(event, TokenEvent) and event.index == 2:
                        await eng.abort(trickle.request_id)
                return events

            async def abort_while_waiting():
                task = asyncio.create_task(collect(eng, slow))
                await asyncio.sleep(0.1)
                t = time.perf_counter()
                await eng.abort(slow.request_id)
                events = await task
                return events, time.perf_counter() - t

            return await abort_after_tokens(), await abort_while_waiting()
        finally:
            await eng.stop()

    mid, (early, abort_latency) = run(go())
    assert mid[-1].reason == "abort" and sum(isinstance(e, TokenEvent) for e in mid) == 3
    assert len(early) == 1 and early[0].reason == "abort"
    assert abort_latency < 0.5  # not held until the slow server answers (it waits 1 s)


def test_mixed_faults_in_one_open_loop_run(faulty):
    """The load generator's run completes with one typed record per request, whatever the server does."""
    modes = sorted(EXPECTED)
    schedule = [Scheduled(request(mode, i), 0.004 * i) for i, mode in enumerate(modes * 3)]

    async def go():
        eng = engine(faulty)
        await eng.start()
        records = []
        try:
            outcome = await run_open_loop(eng, schedule, records.append, label="faulty")
        finally:
            await eng.stop()
        return outcome, records

    outcome, records = run(go())
    assert outcome.records == len(schedule) == len(records)
    by_id = {r.request_id: r for r in records}
    for item in schedule:
        mode = item.request.prompt_text
        record = by_id[item.request.request_id]
        reason, error_type, _ = EXPECTED[mode]
        assert (record.finish_reason, record.error_type) == (reason, error_type), (mode, record)
    assert outcome.errors == sum(1 for r in records if r.error_type)


def test_no_admit_event_the_server_is_not_seen_admitting(faulty):
    """The send time is no admission time: an HTTP engine reports none, so queueing is n/a, not 0."""

    async def go():
        eng = engine(faulty)
        await eng.start()
        try:
            return await collect(eng, request("slow_ok"))
        finally:
            await eng.stop()

    events = run(go())
    assert not any(isinstance(e, AdmitEvent) for e in events)
    assert any(isinstance(e, TokenEvent) for e in events) and isinstance(events[-1], FinishEvent)


def test_describe_never_shows_the_api_key():
    eng = HttpEngine("http://user:pw@127.0.0.1:9/v1", "m", api_key="sk-very-secret", connections=7)
    text = repr(eng.describe())
    assert "sk-very-secret" not in text and "pw" not in text
    options = eng.describe()["options"]
    assert options["api_key_set"] is True and options["connections"] == 7
    assert options["endpoint"] == "http://127.0.0.1:9/v1/completions"
    assert options["read_bufsize"] >= 2 * 2**20
