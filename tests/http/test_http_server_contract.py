"""Contract tests for `batchmark serve`'s app: every endpoint, every error code, disconnects free KV."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import aiohttp
import pytest

from engines.api import SERVER_TIMING_FIELD, Request
from engines.http import HttpEngine
from engines.http.scrape_names import parse_prometheus, server_fields
from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.scheduler import ContinuousConfig
from engines.serve import begin_shutdown, make_app
from engines.serve.background import BackgroundServer
from engines.serve.chat import chat_prompt_ids
from engines.serve.state import STATE
from harness.loadgen import Scheduled, run_open_loop
from harness.metrics import records_frame
from harness.metrics.latency import request_latencies
from harness.metrics.reasoning import ttfo

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

MODEL = "test-model"
KV = KVConfig(memory_mb=8)  # small: the test pool holds 64 blocks of 16 tokens


def engine_for(embedded, kv: KVConfig = KV, **continuous) -> InProcessEngine:
    return InProcessEngine(embedded, EngineOptions(kv=kv, continuous=ContinuousConfig(**continuous)))


@pytest.fixture(scope="module")
def server(embedded):
    def app():
        return make_app(engine_for(embedded), embedded.tokenizer, MODEL, max_body_bytes=64 * 1024)

    with BackgroundServer(app) as s:
        yield s


def call(url: str, method: str, path: str, body=None, *, raw: bytes | None = None, headers=None):
    """One request; returns (status, headers, parsed JSON or text)."""

    async def go():
        async with aiohttp.ClientSession() as session:
            data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
            hdrs = {"Content-Type": "application/json", **(headers or {})}
            async with session.request(method, url + path, data=data, headers=hdrs) as response:
                text = await response.text()
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = text
                return response.status, response.headers, parsed

    return asyncio.run(go())


def stream(url: str, path: str, body: dict) -> list[dict | str]:
    """A streaming request; returns the parsed SSE data payloads in order ("[DONE]" as a string)."""

    async def go():
        async with aiohttp.ClientSession() as session, session.post(url + path, json=body) as response:
            assert response.status == 200, await response.text()
            assert response.headers["Content-Type"].startswith("text/event-stream")
            text = await response.text()
        events = []
        for block in text.split("\n\n"):
            if block.startswith("data: "):
                payload = block[6:]
                events.append(payload if payload == "[DONE]" else json.loads(payload))
        return events

    return asyncio.run(go())


def wait_until(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


# -- endpoints --------------------------------------------------------------------------------------
def test_health_and_models(server):
    assert call(server.url, "GET", "/health")[::2] == (200, {"status": "ok"})
    status, _, body = call(server.url, "GET", "/v1/models")
    assert status == 200 and body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [MODEL]
    assert body["data"][0]["max_model_len"] == server.app[STATE].engine.max_context


def test_completion_text_prompt_non_streaming(server, embedded):
    body = {"model": MODEL, "prompt": "def main():", "max_tokens": 7, "ignore_eos": True, "return_token_ids": True}
    status, _, out = call(server.url, "POST", "/v1/completions", body)
    assert status == 200, out
    choice = out["choices"][0]
    assert out["object"] == "text_completion" and choice["finish_reason"] == "length"
    assert len(choice["token_ids"]) == 7
    assert choice["text"] == embedded.tokenizer.decode(choice["token_ids"], skip_special_tokens=True)
    prompt_len = len(embedded.tokenizer("def main():", add_special_tokens=False)["input_ids"])
    assert out["usage"] == {
        "prompt_tokens": prompt_len,
        "completion_tokens": 7,
        "total_tokens": prompt_len + 7,
        "prompt_tokens_details": {"cached_tokens": 0},  # a 3-token prompt holds no full block to reuse
    }


def test_streaming_matches_non_streaming_and_reports_usage(server):
    base = {
        "model": MODEL,
        "prompt": [11, 22, 33, 44, 55],
        "max_tokens": 9,
        "ignore_eos": True,
        "return_token_ids": True,
    }
    _, _, whole = call(server.url, "POST", "/v1/completions", base)
    events = stream(server.url, "/v1/completions", {**base, "stream": True, "stream_options": {"include_usage": True}})
    assert events[-1] == "[DONE]"
    usage = events[-2]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 9 and usage["usage"]["prompt_tokens"] == 5
    chunks = events[:-2]
    ids = [t for c in chunks for t in c["choices"][0]["token_ids"]]
    assert ids == whole["choices"][0]["token_ids"]  # greedy: the same tokens either way
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "length"
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]


def test_streaming_without_usage_has_no_usage_chunk(server):
    events = stream(
        server.url,
        "/v1/completions",
        {"model": MODEL, "prompt": "x = 1", "max_tokens": 3, "ignore_eos": True, "stream": True},
    )
    assert events[-1] == "[DONE]"
    assert all("usage" not in e for e in events[:-1])
    assert sum(1 for e in events[:-1] if e["choices"][0]["finish_reason"] is None) == 3


def test_every_completion_ends_with_the_servers_own_timing(server):
    """The server's TTFT and queue wait of each request (SERVER_TIMING_FIELD): on the stream's last chunk only
    (the usage chunk when asked for, else the finish chunk), at a plain completion's top level."""
    base = {"model": MODEL, "prompt": [11, 22, 33], "max_tokens": 4, "ignore_eos": True}
    _, _, whole = call(server.url, "POST", "/v1/completions", base)
    with_usage = stream(
        server.url, "/v1/completions", {**base, "stream": True, "stream_options": {"include_usage": True}}
    )
    plain = stream(server.url, "/v1/completions", {**base, "stream": True})
    for said, events in ((whole, []), (with_usage[-2], with_usage[:-2]), (plain[-2], plain[:-2])):
        timing = said[SERVER_TIMING_FIELD]
        assert 0 <= timing["queue_s"] <= timing["ttft_s"] < 10, timing  # the in-process engine reports admissions
        assert all(SERVER_TIMING_FIELD not in e for e in events)
    assert "usage" in with_usage[-2] and plain[-2]["choices"][0]["finish_reason"] == "length"


def test_chat_streaming_and_not(server, embedded):
    parts = [{"type": "text", "text": "hi"}]
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": parts}]
    base = {"model": MODEL, "messages": messages, "max_tokens": 5, "ignore_eos": True}
    status, _, whole = call(server.url, "POST", "/v1/chat/completions", base)
    assert status == 200, whole
    assert whole["object"] == "chat.completion"
    assert whole["choices"][0]["message"]["role"] == "assistant"
    flat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert whole["usage"]["prompt_tokens"] == len(chat_prompt_ids(embedded.tokenizer, flat))
    events = stream(
        server.url, "/v1/chat/completions", {**base, "stream": True, "stream_options": {"include_usage": True}}
    )
    chunks = [e for e in events[:-1] if e["choices"]]
    assert chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert events[-2]["usage"]["completion_tokens"] == 5


def test_reasoning_tokens_come_as_reasoning_content_and_take_their_decode_steps(server):
    """`reasoning_tokens`: the first r tokens stream as vLLM's `delta.reasoning_content`; read by the HTTP engine
    through the load generator, TTFO - TTFT is the time of those r decode steps (the step trace's) within one step."""
    state = server.app[STATE]
    steps: list = []

    async def go():
        engine = HttpEngine(server.url, MODEL, api="chat", return_token_ids=True)  # the tiny model's text lags
        request = Request("think", [], 4, ignore_eos=True, prompt_text="hi", reasoning_tokens=2)
        records: list = []
        await engine.start()
        try:
            await run_open_loop(engine, [Scheduled(request, 0.0)], records.append, label="serve")
        finally:
            await engine.stop()
        return records_frame(records)

    def attempt() -> tuple[float, float, float]:
        """(observed TTFO - TTFT, the step trace's reasoning time, one decode step) of one request."""
        steps.clear()
        state.engine.set_step_sink(lambda record: (state.metrics.on_step(record), steps.append(record)))
        try:
            frame = asyncio.run(go())
        finally:
            state.engine.set_step_sink(state.metrics.on_step)
        assert frame["token_channels"].tolist() == ["rrcc"]
        observed = (ttfo(frame) - request_latencies(frame)["ttft"]).iloc[0]
        first = next(i for i, step in enumerate(steps) if step.phase != "decode")  # the prefill yields token 0
        thinking = steps[first + 1 : first + 3]  # the decode steps of tokens 1 and 2: token 2 is the first content
        assert [step.phase for step in thinking] == ["decode"] * 2
        return observed, thinking[-1].t_end - steps[first].t_end, max(s.t_end - s.t_start for s in thinking)

    # On a loaded machine the client may read two events in one wake-up and see them at the same instant
    # (seen on a 2-core CI-like run: 0.2 ms observed against 53 ms stepped), or read one late (6.7 ms over a 3 ms
    # step, in about half the attempts on a busy machine): up to eight requests, one must match within a step.
    for _ in range(8):
        observed, expected, step = attempt()
        if abs(observed - expected) <= step:
            break
    assert abs(observed - expected) <= step, (observed, expected)
    events = stream(
        server.url,
        "/v1/completions",
        {"model": MODEL, "prompt": "hi", "max_tokens": 2, "stream": True, "ignore_eos": True, "reasoning_tokens": 1},
    )
    choices = [e["choices"][0] for e in events[:-1] if e["choices"] and e["choices"][0]["finish_reason"] is None]
    assert ["reasoning_content" in c for c in choices] == [True, False]
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 2,
        "ignore_eos": True,
        "reasoning_tokens": 1,
        "return_token_ids": True,
    }
    status, _, whole = call(server.url, "POST", "/v1/chat/completions", body)
    message = whole["choices"][0]["message"]
    assert status == 200 and set(message) == {"role", "content", "reasoning_content"}, whole
    ids = whole["choices"][0]["token_ids"]
    decode = server.app[STATE].tokenizer.decode
    assert message["reasoning_content"] == decode(ids[:1], skip_special_tokens=True)  # the answer apart from it
    assert message["content"] == decode(ids[1:], skip_special_tokens=True)


def test_metrics_exposition(server):
    body = {"model": MODEL, "prompt": "a b c", "max_tokens": 4, "ignore_eos": True}
    call(server.url, "POST", "/v1/completions", body)
    status, headers, text = call(server.url, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    assert values["batchmark_requests_running"] == 0 and values["batchmark_requests_waiting"] == 0
    assert values["batchmark_kv_blocks_used"] == 0 and values["batchmark_kv_blocks_total"] > 0
    state = server.app[STATE]
    assert values["batchmark_generation_tokens_total"] == state.metrics.generation_tokens >= 4
    assert values["batchmark_step_seconds_count"] >= 4
    assert values['batchmark_step_seconds_bucket{le="+Inf"}'] == values["batchmark_step_seconds_count"]
    assert values["batchmark_time_to_first_token_seconds_count"] >= 1
    assert values['batchmark_requests_finished_total{reason="length"}'] >= 1
    # The same state under vLLM's names, read through the scrape's name map as a vLLM server would be.
    fields = server_fields(parse_prometheus(text))
    assert fields["running"] == values["batchmark_requests_running"]
    assert fields["waiting"] == values["batchmark_requests_waiting"]
    assert fields["kv_usage"] == values["batchmark_kv_blocks_used"] / values["batchmark_kv_blocks_total"]
    assert fields["prefix_hits"] == values["batchmark_prefix_cache_hit_tokens_total"]
    assert fields["prefix_queries"] == values["batchmark_prompt_tokens_total"] >= 3
    assert fields["preemptions"] == state.metrics.preemptions
    assert values["vllm:generation_tokens_total"] == values["batchmark_generation_tokens_total"]


# -- errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/completions", {"model": MODEL}, "prompt"),
        ("/v1/completions", {"model": MODEL, "prompt": ""}, "prompt"),
        ("/v1/completions", {"model": MODEL, "prompt": [1, "x"]}, "prompt"),
        ("/v1/completions", {"model": MODEL, "prompt": ["a", "b"]}, "prompt"),
        ("/v1/completions", {"model": MODEL, "prompt": [999999]}, "prompt"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "max_tokens": 0}, "max_tokens"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "max_tokens": True}, "max_tokens"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "max_tokens": 10**6}, "max_tokens"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "stream": "yes"}, "stream"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "n": 2}, "n"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "stop": ["\n"]}, "stop"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "reasoning_tokens": -1}, "reasoning_tokens"),
        ("/v1/completions", {"model": MODEL, "prompt": "a", "reasoning_tokens": 1.5}, "reasoning_tokens"),
        (
            "/v1/completions",
            {"model": MODEL, "prompt": "a", "stream_options": {"include_usage": 1}},
            "stream_options.include_usage",
        ),
        ("/v1/completions", {"prompt": "a"}, "model"),
        ("/v1/chat/completions", {"model": MODEL}, "messages"),
        ("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        (
            "/v1/chat/completions",
            {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -1},
            "max_completion_tokens",
        ),
    ],
)
def test_invalid_body_is_400_naming_the_field(server, path, body, param):
    status, _, out = call(server.url, "POST", path, body)
    assert status == 400, out
    assert out["error"]["param"] == param
    assert param in out["error"]["message"]
    assert out["error"]["type"] == "invalid_request_error"


def test_malformed_json_and_non_object(server):
    for raw in (b"{not json", b"[1, 2]"):
        status, _, out = call(server.url, "POST", "/v1/completions", raw=raw)
        assert status == 400 and out["error"]["param"] == "body"


def test_unknown_model_route_and_method(server):
    status, _, out = call(server.url, "POST", "/v1/completions", {"model": "other", "prompt": "a"})
    assert status == 404 and out["error"]["code"] == "model_not_found"
    status, _, out = call(server.url, "GET", "/v1/nothing")
    assert status == 404 and "error" in out
    status, _, out = call(server.url, "GET", "/v1/completions")
    assert status == 405 and "error" in out


def test_oversized_body_is_413(server):
    huge = {"model": MODEL, "prompt": "word " * 20000}  # ~100 KB, over the fixture's 64 KiB
    status, _, out = call(server.url, "POST", "/v1/completions", huge)
    assert status == 413 and out["error"]["code"] == "body_too_large"


def test_api_key(embedded):
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL, api_key="s3cret")  # noqa: E731
    with BackgroundServer(app) as s:
        body = {"model": MODEL, "prompt": "a", "max_tokens": 1}
        assert call(s.url, "POST", "/v1/completions", body)[0] == 401
        assert call(s.url, "POST", "/v1/completions", body, headers={"Authorization": "Bearer wrong"})[0] == 401
        assert call(s.url, "POST", "/v1/completions", body, headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert call(s.url, "GET", "/v1/models")[0] == 401
        assert call(s.url, "GET", "/health")[0] == 200  # probes need no secret


# -- queueing, shutdown, disconnects ------------------------------------------------------------------
async def _read_some(response: aiohttp.ClientResponse, events: int) -> None:
    seen = 0
    while seen < events:
        line = await asyncio.wait_for(response.content.readline(), 10)
        assert line, "stream ended early"
        seen += line.startswith(b"data: ")


def test_full_waiting_queue_is_429_with_retry_after(embedded):
    app = lambda: make_app(engine_for(embedded, max_running=1), embedded.tokenizer, MODEL, max_waiting=1)  # noqa: E731
    long = {"model": MODEL, "prompt": [5, 6, 7], "max_tokens": 400, "ignore_eos": True, "stream": True}
    with BackgroundServer(app) as s:

        async def go():
            async with aiohttp.ClientSession() as session:
                running = await session.post(s.url + "/v1/completions", json=long)
                await _read_some(running, 1)  # admitted: the only running slot is taken
                waiting = await session.post(s.url + "/v1/completions", json=long)  # queued: the waiting queue is full
                assert wait_until(lambda: s.app[STATE].metrics.waiting == 1, 5)
                rejected = await session.post(s.url + "/v1/completions", json={**long, "stream": False})
                out = await rejected.json()
                running.close()
                waiting.close()
                return rejected.status, rejected.headers.get("Retry-After"), out

        status, retry_after, out = asyncio.run(go())
        assert status == 429 and out["error"]["code"] == "queue_full"
        assert retry_after is not None and int(retry_after) >= 1
        assert wait_until(lambda: s.app[STATE].engine.blocks.num_used == 0)


def test_shutdown_refuses_new_requests_and_drains_running(embedded):
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL)  # noqa: E731
    s = BackgroundServer(app)
    s.start()
    body = {"model": MODEL, "prompt": [9, 8, 7], "max_tokens": 60, "ignore_eos": True, "stream": True}

    async def go():
        async with aiohttp.ClientSession() as session:
            running = await session.post(s.url + "/v1/completions", json=body)
            await _read_some(running, 2)
            s.call(lambda: _begin(s))
            refused = await session.post(s.url + "/v1/completions", json=body)
            health = await session.get(s.url + "/health")
            rest = await running.text()  # the running request still completes
            return refused.status, (await refused.json())["error"]["code"], health.status, rest

    try:
        status, code, health, rest = asyncio.run(go())
    finally:
        drained = s.stop()
    assert (status, code, health) == (503, "shutting_down", 503)
    assert rest.endswith("data: [DONE]\n\n") and rest.count('"finish_reason":"length"') == 1
    assert drained is True


async def _begin(server: BackgroundServer) -> None:
    assert server.app is not None
    begin_shutdown(server.app)


def _stop_while_streaming(s: BackgroundServer, max_tokens: int) -> tuple[str, bool | None]:
    """Start `s`, stream one request, stop the server after its first event: (the rest of the stream, drained)."""
    s.start()
    body = {"model": MODEL, "prompt": [4, 5, 6], "max_tokens": max_tokens, "ignore_eos": True, "stream": True}

    async def go():
        async with aiohttp.ClientSession() as session:
            running = await session.post(s.url + "/v1/completions", json=body)
            await _read_some(running, 1)
            stopper = asyncio.get_running_loop().run_in_executor(None, s.stop)
            try:
                rest = await running.text()
            except aiohttp.ClientPayloadError:  # the server cut the stream
                rest = ""
            return rest, await stopper

    return asyncio.run(go())


def test_stop_drains_in_flight_requests(embedded):
    """SIGTERM semantics: stop() waits for a running stream to finish instead of cutting it."""
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL)  # noqa: E731
    s = BackgroundServer(app)
    rest, drained = _stop_while_streaming(s, max_tokens=80)
    assert drained is True
    assert rest.endswith("data: [DONE]\n\n")
    assert any("draining 1 requests" in line for line in s.lines)


def test_drain_timeout_aborts_what_still_runs(embedded):
    """After --drain-timeout the rest is cut at once (not after aiohttp's own 60 s shutdown grace)."""
    engine = lambda: engine_for(embedded, KVConfig(memory_mb=32))  # noqa: E731
    app = lambda: make_app(engine(), embedded.tokenizer, MODEL, drain_timeout_s=0.3)  # noqa: E731
    s = BackgroundServer(app)
    rest, drained = _stop_while_streaming(s, max_tokens=1500)
    assert drained is False
    assert '"finish_reason":"length"' not in rest  # cut: 1500 tokens take seconds, the drain allowed 0.3 s
    assert any("drain timed out; aborting 1 requests" in line for line in s.lines), s.lines


@pytest.mark.parametrize("streaming", [True, False])
def test_client_disconnect_aborts_and_frees_kv(embedded, streaming):
    app = lambda: make_app(engine_for(embedded, KVConfig(memory_mb=32)), embedded.tokenizer, MODEL)  # noqa: E731
    body = {"model": MODEL, "prompt": list(range(10, 60)), "max_tokens": 3000, "ignore_eos": True, "stream": streaming}
    with BackgroundServer(app) as s:
        state = s.app[STATE]
        engine = state.engine

        async def go():
            async with aiohttp.ClientSession() as session:
                if streaming:
                    response = await session.post(s.url + "/v1/completions", json=body)
                    await _read_some(response, 3)
                    assert engine.blocks.num_used > 0
                    response.close()  # drop the connection mid-generation
                    return
                # nothing comes back before the end: wait until the engine computes it, then hang up
                pending = asyncio.create_task(session.post(s.url + "/v1/completions", json=body))
                for _ in range(1000):
                    if engine.blocks.num_used > 0 and state.metrics.generation_tokens >= 3:
                        break
                    await asyncio.sleep(0.01)
                assert engine.blocks.num_used > 0
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pending

        asyncio.run(go())
        assert wait_until(lambda: engine.blocks.num_used == 0, 10), f"{engine.blocks.num_used} blocks still held"
        assert wait_until(lambda: state.metrics.finished.get("abort") == 1, 5)
        assert state.metrics.running == 0 and state.in_flight == 0
        assert not engine.scheduler.running and len(engine.scheduler.waiting) == 0
        assert state.metrics.generation_tokens < 3000  # it stopped early, not ran to the end


def test_get_load_counts_requests_and_kv_tokens(server):
    """GET /get_load in the shape vllm-router's and sglang-router's load monitors parse: while a stream is open
    its request counts and its KV blocks' tokens show; once it finished, nothing does."""
    block = KV.block_size

    async def go():
        body = {"model": MODEL, "prompt": "a b c d e", "max_tokens": 48, "ignore_eos": True, "stream": True}
        async with aiohttp.ClientSession() as session:
            async with session.post(server.url + "/v1/completions", json=body) as stream:
                await stream.content.readline()  # the first event: the request is admitted and holds blocks
                async with session.get(server.url + "/get_load") as response:
                    during = await response.json()
                await stream.read()
            async with session.get(server.url + "/get_load") as response:
                return during, await response.json()

    during, after = asyncio.run(go())
    (load,) = during
    assert load["dp_rank"] == 0 and load["num_reqs"] == 1 and load["num_waiting_reqs"] == 0
    assert load["num_tokens"] >= block and load["num_tokens"] % block == 0
    assert after == [{"dp_rank": 0, "num_reqs": 0, "num_waiting_reqs": 0, "num_tokens": 0}]
