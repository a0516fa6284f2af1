"""`--scrape` against a real `batchmark serve` app (in this process, continuous engine): the server series in the
run directory, an unreachable explicit URL refused before any work, no scrape when asked for none."""

from __future__ import annotations

import json
import socket

import pytest

from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.scheduler import ContinuousConfig
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from harness.cli import main

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

MODEL = "scrape-model"


@pytest.fixture(scope="module")
def server(embedded):
    def app():
        engine = InProcessEngine(embedded, EngineOptions(kv=KVConfig(memory_mb=8), continuous=ContinuousConfig()))
        return make_app(engine, embedded.tokenizer, MODEL)

    with BackgroundServer(app) as s:
        yield s


def _run(out, url: str, *extra: str, requests: str = "4") -> int:
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        requests,
        "--engine",
        f"http:url={url}",
        "--served-model",
        MODEL,
        "--out",
        str(out),
        "--no-report",
        *extra,
    ]
    return main(argv)


@pytest.fixture(scope="module")
def scraped(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("scraped")
    assert _run(out, server.url, "--scrape-interval-ms", "50") == 0  # default: the target's own /metrics
    return out


def test_run_writes_the_server_series(scraped):
    path = scraped / "server" / "http-t0.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    ok = [r for r in rows if r["ok"]]
    assert len(ok) >= 2 and all({"running", "waiting", "kv_usage", "prefix_hits"} <= r.keys() for r in ok)
    assert [r["t"] for r in rows] == sorted(r["t"] for r in rows)
    assert ok[-1]["prefix_queries"] > ok[0]["prefix_queries"]  # the trial's prompts, counted by the server
    assert max(r["running"] for r in ok) >= 1  # seen mid-trial, not only before and after
    engine = json.loads((scraped / "manifest.json").read_text())["engines"][0]
    assert engine["scrape"]["interval_ms"] == 50 and engine["scrape"]["url"].endswith("/metrics")


def test_hit_rate_and_warnings_come_from_the_server_series(scraped):
    rows = [json.loads(line) for line in (scraped / "server" / "http-t0.jsonl").read_text().splitlines()]
    ok = [r for r in rows if r["ok"]]
    server = json.loads((scraped / "metrics.json").read_text())["engines"]["http"]["server"]
    assert server["samples"] == len(ok) and server["gaps"] == len(rows) - len(ok)
    cache = server["prefix_cache"]
    assert cache["hit_tokens"] == ok[-1]["prefix_hits"] - ok[0]["prefix_hits"]
    assert cache["query_tokens"] == ok[-1]["prefix_queries"] - ok[0]["prefix_queries"]
    assert cache["hit_rate"] == cache["hit_tokens"] / cache["query_tokens"]
    assert server["spec_decode"] is None  # serve drafts nothing: no acceptance figure, no default
    signals = json.loads((scraped / "metrics.json").read_text())["engines"]["http"]["warnings"]["signals"]
    assert signals["kv_utilisation"]["measured"]  # the engine-view signal, fed by the scrape


def test_scrape_off_writes_no_series_and_says_n_a(server, tmp_path, capsys):
    assert _run(tmp_path, server.url, "--scrape", "off", requests="2") == 0
    assert not (tmp_path / "server").exists()
    said = capsys.readouterr().out
    line = next(x for x in said.splitlines() if "prefix cache hit rate" in x)
    assert "n/a (no scrape of the server" in line and "0.0%" not in line.split("(")[0]
    assert "http: queueing delay, slowdown and the longest wait n/a: the engine cannot see when the server" in said
    # a client sees no preemption: unknown per request and in the summary, never 0 (issue #33 audit)
    records = [json.loads(row) for row in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [r["preemptions"] for r in records] == [None, None]
    assert json.loads((tmp_path / "metrics.json").read_text())["engines"]["http"]["requests"]["preemptions"] is None


def test_an_http_targets_queueing_is_n_a_with_the_reason(scraped, capsys):
    """A client cannot see the server admit a request: queueing delay, slowdown, the longest wait and starvation
    are n/a with the reason (they were the send time taken as admission: 'measured', about 0)."""
    from reports.markdown import markdown_summary
    from reports.report import build_report

    summary = json.loads((scraped / "metrics.json").read_text())["engines"]["http"]
    for metric in ("queue_delay", "queue_delay_sent", "slowdown"):
        block = summary["latency"][metric]
        assert block["measured"] is False and "cannot see when the server admitted" in block["reason"]
        assert block["count"] == 0 and block["percentiles"]["p50"]["value"] is None
    wait = summary["warnings"]["signals"]["longest_wait"]
    assert wait["measured"] is False and wait["peak"] is None and "cannot see" in wait["reason"]
    starving = summary["fairness"]["starvation"]
    assert starving["never_admitted"] is None and starving["max_queue_delay_s"] is None and not starving["measured"]
    assert all(row["max_queue_delay"] is None for row in summary["tenants"].values())
    assert "queueing delay, slowdown and the longest wait n/a: the engine cannot see" in markdown_summary(scraped)
    html = build_report([scraped])
    assert "queueing delay, slowdown and the longest wait n/a" in html and 'title="the engine cannot see' in html


def test_unreachable_scrape_url_is_one_line_exit_2(server, tmp_path, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert _run(tmp_path, server.url, "--scrape", f"http://127.0.0.1:{port}/metrics") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--scrape" in err and "unreachable" in err
    assert not (tmp_path / "records.jsonl").exists()  # refused before any work


def test_report_shows_the_servers_queue_and_kv_over_time(scraped):
    from reports.report import build_report

    html = build_report([scraped])
    assert "requests queued (server)" in html and "KV cache in use (server, share)" in html


def test_a_failing_scrape_is_a_gap_not_an_end():
    import asyncio

    from engines.http.scraper import ServerScraper

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def go():
        scraper = ServerScraper(f"http://127.0.0.1:{port}/metrics", interval_s=0.02)
        await scraper.start()
        await asyncio.sleep(0.1)
        return await scraper.stop()

    rows = asyncio.run(go())
    assert len(rows) >= 2 and all(not r["ok"] and r["error"] for r in rows)
