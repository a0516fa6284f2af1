"""Reasoning tokens over HTTP: the chunk reader's two channels, `<think>` splitting, and end to end against the
zero server streaming `reasoning_tokens` as `reasoning_content` (TTFO - TTFT is the reasoning tokens' time)."""

from __future__ import annotations

import asyncio
import json

import pytest

from engines.api import Request
from engines.http import HttpEngine
from engines.http.engine import _Stream
from engines.http.payload import ChunkInfo, build_body, read_chunk
from engines.http.think import ThinkTags
from engines.serve.zero_server import start_zero_server
from harness.loadgen import Scheduled, run_open_loop
from harness.metrics import records_frame
from harness.metrics.latency import request_latencies
from harness.metrics.reasoning import reasoning_exhausted, reasoning_summary, ttfo

STEP_S = 0.02  # the zero server's gap between streamed tokens: one decode step
REASONING = 3


def _chat(delta: dict) -> bytes:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode()


@pytest.mark.parametrize(
    ("data", "chat", "tokens", "reasoning"),
    [
        (_chat({"reasoning_content": "Hm"}), True, 1, True),  # vLLM, SGLang, DeepSeek
        (_chat({"reasoning": "Hm", "content": None}), True, 1, True),  # vLLM's newer name
        (_chat({"content": "Hi", "reasoning_content": None}), True, 1, False),
        (_chat({"content": "Hi", "reasoning_content": "so"}), True, 1, False),  # both: the answer has begun
        (_chat({"role": "assistant", "content": ""}), True, 0, False),
        (_chat({"reasoning_content": ""}), True, 1, True),  # a reasoning token whose text is not complete yet
        (
            json.dumps({"choices": [{"text": "", "reasoning_content": "", "finish_reason": None}]}).encode(),
            False,
            1,
            True,
        ),  # the same in batchmark serve's completions
        (
            json.dumps(
                {"choices": [{"delta": {"reasoning_content": ""}, "token_ids": [7], "finish_reason": None}]}
            ).encode(),
            True,
            1,
            True,
        ),  # a token whose text ends a character later: its channel is still named
        (
            json.dumps({"choices": [{"text": "", "reasoning_content": "x", "finish_reason": None}]}).encode(),
            False,
            1,
            True,
        ),  # batchmark serve's completions
    ],
)
def test_read_chunk_puts_reasoning_text_on_its_channel(data, chat, tokens, reasoning) -> None:
    info = read_chunk(data, chat)
    assert (info.tokens, info.reasoning) == (tokens, reasoning)


def test_think_tags_split_the_content_even_when_a_tag_is_cut() -> None:
    tags = ThinkTags("on")
    chunks = ["<think>", "Let me", " see", "</th", "ink>", "\n\nThe", " answer", " <"]
    assert [tags.feed(c) for c in chunks] == [True, True, True, True, True, False, False, False]
    opened = ThinkTags("open")  # the template opened the block: reasoning until the first </think>
    assert [opened.feed(c) for c in ["Hm", "</think>", "Hi"]] == [True, True, False]
    assert [ThinkTags("on").feed(c) for c in ["Hello", " there"]] == [False, False]


def test_stream_marks_think_tokens_and_usage_adds_on_the_last_channel() -> None:
    stream = _Stream(Request("t", [1], 10), think=ThinkTags("on"))
    events = []
    for text in ["<think>", "a", "</think>", "Yes"]:
        events += stream.apply(ChunkInfo(tokens=1, content=text), 0.0)
    assert [e.reasoning for e in events] == [True, True, True, False]
    stream.usage_completion = 6  # two tokens no chunk counted: they are the answer's
    assert [e.reasoning for e in stream.reconcile()] == [False, False]


def test_the_request_asks_for_its_reasoning_tokens_only_when_it_has_any() -> None:
    common = {
        "api": "chat",
        "model": "m",
        "use_ids": False,
        "tokenizer": None,
        "include_usage": False,
        "return_token_ids": False,
        "extra": {},
    }
    assert build_body(Request("a", [], 8, prompt_text="hi", reasoning_tokens=3), **common)["reasoning_tokens"] == 3
    assert "reasoning_tokens" not in build_body(Request("b", [], 8, prompt_text="hi"), **common)


@pytest.fixture(scope="module")
def zero_runs():
    """Per API: records of requests with 3 reasoning tokens of 8, and one whose max_tokens (2) all went to reasoning,
    streamed STEP_S apart by the zero server, read by the HTTP engine through the load generator."""

    async def one(url: str, api: str):
        engine = HttpEngine(url, "zero", api=api, prompt_format="text")
        schedule = [
            Scheduled(Request(f"{api}{i}", [5], 8, True, prompt_text="q", reasoning_tokens=REASONING), i * 0.1)
            for i in range(3)
        ]
        schedule.append(
            Scheduled(Request(f"{api}-spent", [5], 2, True, prompt_text="q", reasoning_tokens=REASONING), 0.3)
        )
        records: list = []
        await engine.start()
        try:
            await run_open_loop(engine, schedule, records.append, label=api)
        finally:
            await engine.stop()
        return records_frame(records)

    async def go():
        server = await start_zero_server(token_delay_s=STEP_S)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            chat, completions = await asyncio.gather(one(url, "chat"), one(url, "completions"))
        finally:
            server.close()
            await server.wait_closed()
        return {"chat": chat, "completions": completions}

    return asyncio.run(go())


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_ttfo_minus_ttft_is_the_reasoning_tokens_time_within_one_step(zero_runs, api) -> None:
    frame = zero_runs[api]
    answered = frame[frame["max_tokens"] == 8]
    assert answered["token_channels"].tolist() == ["rrrccccc"] * 3
    gap = ttfo(answered) - request_latencies(answered)["ttft"]
    # the first content token comes REASONING steps after the first (reasoning) token. A stall of a loaded
    # machine can lengthen a gap, or shorten one (the client wakes late for the first token and reads several at
    # once), so one of the three requests is held to within one step of it
    low, high = REASONING * STEP_S * 0.95, (REASONING + 1) * STEP_S
    assert any(low <= g <= high for g in gap), gap.tolist()


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_max_tokens_spent_in_reasoning_is_flagged(zero_runs, api) -> None:
    frame = zero_runs[api]
    assert frame.loc[reasoning_exhausted(frame), "request_id"].tolist() == [f"{api}-spent"]
    block = reasoning_summary(frame, n_boot=20)  # metrics.json's `reasoning`
    assert (block["exhausted"], block["reasoning_tokens"], block["content_tokens"]) == (1, 3 * 3 + 2, 3 * 5)
