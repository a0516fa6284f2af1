"""Per-request spec-decode counts from an HTTP target: vLLM 0.32 started with `--per-request-spec-decode-metrics
summary` puts `metrics.speculative_decoding` on the final usage chunk of a stream (the shape of
vllm/entrypoints/generate/base/protocol.py's SpeculativeDecodingMetrics); they reach the records and summary."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from engines.api import FinishEvent, Request
from engines.http import HttpEngine
from engines.http.payload import read_chunk
from engines.serve.background import BackgroundServer

# vLLM's field set; the values of a request with 5 verify steps of k=3 (15 drafted, 7 accepted)
SPEC = {
    "mean_acceptance_length": 2.4,
    "draft_acceptance_rate": 7 / 15,
    "acceptance_histogram": [1, 2, 1, 1],
    "num_spec_steps": 5,
    "num_accepted_draft_tokens": 7,
    "num_draft_tokens": 15,
    "num_spec_tokens": 3,
}


def _app() -> web.Application:
    async def completions(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(13):
            choice = {"index": 0, "text": " a", "logprobs": None, "finish_reason": "length" if i == 12 else None}
            await response.write(b"data: " + json.dumps({"id": "x", "choices": [choice]}).encode() + b"\n\n")
        usage = {"prompt_tokens": 2, "completion_tokens": 13, "total_tokens": 15}
        final = {"id": "x", "choices": [], "usage": usage, "metrics": {"speculative_decoding": SPEC}}
        await response.write(b"data: " + json.dumps(final).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


def test_vllm_per_request_spec_decode_metrics_reach_the_finish_event() -> None:
    async def go(url: str) -> FinishEvent:
        engine = HttpEngine(url, "m", prompt_format="text")
        await engine.start()
        try:
            events = [e async for e in engine.generate(Request("a", [1], 13, prompt_text="hi"))]
        finally:
            await engine.stop()
        assert isinstance(events[-1], FinishEvent)
        return events[-1]

    with BackgroundServer(_app) as server:
        finish = asyncio.run(go(server.url))
    counts = finish.spec_decode
    assert counts is not None and (counts.drafts, counts.draft_tokens, counts.accepted_tokens) == (5, 15, 7)


def test_an_odd_or_absent_field_is_no_counts_never_a_failure() -> None:
    for metrics in (
        None,
        {"speculative_decoding": None},
        {"speculative_decoding": {**SPEC, "num_spec_steps": -1}},
        {"speculative_decoding": "x"},
        {"time_to_first_token_ms": 3.0},
    ):
        obj = {"id": "x", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "metrics": metrics}
        assert read_chunk(json.dumps(obj).encode(), False).spec_decode is None


def test_per_request_length_is_over_drafts_and_rate_over_draft_tokens() -> None:
    """vLLM counts a draft per verify step that scheduled draft tokens, and under async scheduling a step whose
    placeholders were all left unfilled is a draft of no draft token (harness/metrics/spec_decode.py cites the
    source). Such a request's mean acceptance length is 1 (vLLM's own figure for it), and it has no rate; it used
    to drop out of the per-request length too."""
    import pandas as pd

    from harness.metrics.spec_decode import describe_spec_decode, spec_decode_summary

    records = pd.DataFrame({"spec_drafts": [5, 4], "spec_draft_tokens": [15, 0], "spec_accepted_tokens": [7, 0]})
    summary = spec_decode_summary(records)
    per = summary["per_request"]
    assert per["mean_acceptance_length"]["n"] == 2 and per["mean_acceptance_length"]["p10"] < 1.2
    assert per["acceptance_rate"]["n"] == 1  # only the request with draft tokens has a rate
    assert summary["mean_acceptance_length"] == 1 + 7 / 9 and summary["acceptance_rate"] == 7 / 15
    line = describe_spec_decode("http", {"spec_decode": summary, "server": None})
    assert "per request (2)" in line and "(the 1 with draft tokens)" in line
