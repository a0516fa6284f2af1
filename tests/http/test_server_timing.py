"""Each request's server TTFT, said by `batchmark serve` in its last chunk, recorded by the HTTP engine
(`server_ttft_s`), and the per-request serving path the metrics and `sim serving-path` take from it."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from aiohttp import web

from engines.api import SERVER_TIMING_FIELD, FinishEvent, Request
from engines.http import HttpEngine
from engines.serve.background import BackgroundServer
from harness.cli import main
from harness.console import format_summary
from harness.metrics import records_frame, summarize
from tests.fixtures.records import make_record


@pytest.mark.slow  # the CLI end to end with a served zero-delay engine: imports take most of it
def test_a_served_run_records_each_requests_server_ttft_within_its_client_ttft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import AutoTokenizer

    from engines.model.embedded import TOKENIZER_DIR
    from engines.serve import make_app
    from engines.zero_engine import ZeroLatencyEngine

    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    with BackgroundServer(lambda: make_app(ZeroLatencyEngine(), tokenizer, "batchmark")) as server:
        argv = [
            "run",
            "--workload",
            "chat-small",
            "--requests",
            "12",
            "--rate",
            "40",
            "--engine",
            f"http:url={server.url},label=served",
            "--out",
            str(tmp_path / "run"),
            "--no-report",
            "--seed",
            "1",
        ]
        assert main(argv) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 12
    for r in records:
        assert r["error_type"] is None
        client_ttft = r["t_first_token"] - r["t_sent"]  # from the send: the server cannot have taken longer
        assert 0 < r["server_ttft_s"] <= client_ttft, r
        assert 0 <= r["server_queue_s"] <= r["server_ttft_s"], r  # the zero engine reports its admissions
    path = json.loads((tmp_path / "run" / "metrics.json").read_text())["engines"]["served"]["serving_path"]
    assert path["requests"] == 12
    assert 0 < path["path_p50_s"] <= path["path_p99_s"]
    assert path["server_ttft_p50_s"] < path["client_ttft_p50_s"]
    assert path["queue_requests"] == 12 and 0 <= path["server_queue_p50_s"] <= path["server_ttft_p50_s"]
    out = capsys.readouterr().out
    assert "served: serving path (client TTFT - server's own TTFT, 12 requests): p50 " in out
    assert "; server queue p50 " in out


def metrics(rows: list[dict]) -> dict:
    summary = summarize(records_frame(rows), n_boot=20)
    return {"engines": {"e": summary}, "runs": [{"engine": "e", "trial": 0, "summary": summary}]}


def test_records_without_a_server_ttft_give_no_path_and_no_zero() -> None:
    rows = [make_record(f"r{i}", t_scheduled=0.5 * i, ttft=0.02, gaps=[0.01]) for i in range(8)]
    assert all("server_ttft_s" not in row for row in rows)  # a run from before the field, or any other server's
    out = metrics(rows)
    assert out["engines"]["e"]["serving_path"] is None
    assert "serving path" not in format_summary(out)
    nulls = metrics([row | {"server_ttft_s": None} for row in rows])  # said as null: the same
    assert nulls["engines"]["e"]["serving_path"] is None


def test_only_requests_with_both_ttfts_make_the_path() -> None:
    # a 4 ms server TTFT of a 20 ms client TTFT, one request the machine stalled 500 ms on its way back, one
    # whose server said nothing, one that failed before its first token
    rows = [make_record(f"r{i}", t_scheduled=0.5 * i, ttft=0.020, gaps=[0.01], server_ttft_s=0.004) for i in range(9)]
    rows.append(make_record("stalled", t_scheduled=5.0, ttft=0.520, gaps=[0.01], server_ttft_s=0.004))
    rows.append(make_record("unsaid", t_scheduled=5.5, ttft=0.020, gaps=[0.01]))
    failed = make_record("failed", t_scheduled=6.0, ttft=0.020, server_ttft_s=0.004)
    rows.append(
        failed
        | {
            "t_first_token": None,
            "token_times": [],
            "output_tokens": 0,
            "finish_reason": "error",
            "error_type": "disconnect",
        }
    )
    out = metrics(rows)
    path = out["engines"]["e"]["serving_path"]
    assert path["requests"] == 10
    assert path["path_p50_s"] == pytest.approx(0.016)  # the stall does not move the median
    assert path["path_p99_s"] > 0.4
    assert path["server_ttft_p50_s"] == pytest.approx(0.004) and path["client_ttft_p50_s"] == pytest.approx(0.020)
    assert "e: serving path (client TTFT - server's own TTFT, 10 requests): p50 16.00 ms" in format_summary(out)
    assert path["queue_requests"] == 0 and path["server_queue_p50_s"] is None  # no server said its queue: not 0
    assert "server queue" not in format_summary(out)


def test_the_servers_queue_wait_splits_its_ttft_where_it_said_it() -> None:
    # 16 requests queued 1..16 ms of a 20 ms server TTFT; one more whose server said no queue, one whose server
    # said nothing at all (neither counts)
    rows = [
        make_record(
            f"r{i}", t_scheduled=0.5 * i, ttft=0.030, gaps=[0.01], server_ttft_s=0.020, server_queue_s=0.001 * (i + 1)
        )
        for i in range(16)
    ]
    rows.append(make_record("no-queue", t_scheduled=9.0, ttft=0.030, gaps=[0.01], server_ttft_s=0.020))
    rows.append(make_record("unsaid", t_scheduled=9.5, ttft=0.030, gaps=[0.01], server_queue_s=0.5))
    out = metrics(rows)
    path = out["engines"]["e"]["serving_path"]
    assert path["requests"] == 17 and path["queue_requests"] == 16
    assert path["server_queue_p50_s"] == pytest.approx(0.0085)  # linear: the median of 1..16 ms
    assert path["server_queue_p99_s"] == pytest.approx(0.01585)
    assert "; server queue p50 8.50 ms, p99 15.85 ms)" in format_summary(out)


def timing_app(raw: bytes) -> web.Application:
    """A server whose last chunk carries `raw` (JSON text, as sent) as its timing field."""

    async def completions(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.sleep(0.02)  # a first token 20 ms in: a said TTFT under that is plausible
        choice = {"index": 0, "text": " a", "logprobs": None, "finish_reason": None}
        await response.write(b"data: " + json.dumps({"id": "x", "choices": [choice]}).encode() + b"\n\n")
        last = {"id": "x", "choices": [choice | {"text": "", "finish_reason": "length"}]}
        tail = json.dumps(last).encode()[:-1] + b',"' + SERVER_TIMING_FIELD.encode() + b'":' + raw + b"}"
        await response.write(b"data: " + tail + b"\n\ndata: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


async def one_request(url: str) -> tuple[FinishEvent, dict]:
    engine = HttpEngine(url, "m", prompt_format="text")
    await engine.start()
    try:
        events = [e async for e in engine.generate(Request("q", [1, 2], 1, prompt_text="hi"))]
    finally:
        await engine.stop()
    return events[-1], engine.describe()


@pytest.mark.parametrize(
    "raw",
    [
        b'{"ttft_s":-0.5}',
        b'{"ttft_s":NaN}',
        b'{"ttft_s":Infinity}',
        b'{"ttft_s":"0.01"}',
        b'{"ttft_s":true}',
        b'{"ttft_s":0.01,"queue_s":-1}',
        b'{"queue_s":0.01}',
        b'"0.01"',
        b"[0.01]",
        b"12",
        b'{"ttft_s":100}',
    ],  # longer than the client's own wait from send to first token: not the server's TTFT
)
def test_a_bad_server_timing_is_ignored_with_a_note_and_the_request_stands(raw: bytes) -> None:
    with BackgroundServer(lambda: timing_app(raw)) as server:
        finish, described = asyncio.run(one_request(server.url))
    assert finish.reason == "length" and finish.error_type is None and finish.output_tokens == 1
    assert finish.server_ttft_s is None and finish.server_queue_s is None  # absent, never 0.0
    note = described["server_timing_ignored"]
    assert note["requests"] == 1 and SERVER_TIMING_FIELD in note["first"]


def test_a_good_server_timing_is_taken_as_said() -> None:
    with BackgroundServer(lambda: timing_app(b'{"ttft_s":0.0125,"queue_s":0.002}')) as server:
        finish, described = asyncio.run(one_request(server.url))
    assert finish.server_ttft_s == 0.0125 and finish.server_queue_s == 0.002
    assert described["server_timing_ignored"] is None
    with BackgroundServer(lambda: timing_app(b'{"ttft_s":0}')) as server:  # no queue said: unknown, not 0
        finish, _ = asyncio.run(one_request(server.url))
    assert finish.server_ttft_s == 0.0 and finish.server_queue_s is None
    assert not math.isnan(finish.server_ttft_s)
