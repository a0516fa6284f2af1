"""Issue #35: `scrape=URL|URL` scrapes each replica behind a router on its own, so the fleet's scraped figures
(prefix hit rate, preemptions, peaks) are known, summed from each replica's counters; a bad list is one line,
exit 2, before any work."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from scraped_server import embedded_tokenizer, scraped_run_argv, scripted_metrics_app
from test_http_fleet import round_robin_router

from engines.serve.background import BackgroundServer
from harness.cli import main

pytestmark = pytest.mark.slow  # the CLI end to end

# per scrape of its /metrics, replica a counts 100 more prompt tokens looked up in its prefix cache and 50 more
# found, from its own start (1000, 500); b 10 more looked up and none found, from 72: levels the fleet never mixes
STEPS = {"a": (1000, 100, 500, 50), "b": (72, 10, 0, 0)}


def _replica(tokenizer, name: str):
    scrapes = itertools.count()
    q0, dq, h0, dh = STEPS[name]

    def counters() -> str:
        n = next(scrapes)
        counted = f"vllm:prefix_cache_queries_total {q0 + dq * n}\nvllm:prefix_cache_hits_total {h0 + dh * n}\n"
        fixed = "vllm:num_preemptions_total 0\nvllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0.25\n"
        return counted + fixed

    return scripted_metrics_app(tokenizer, counters, replica_id=name)


@pytest.fixture(scope="module")
def fleet():
    tokenizer = embedded_tokenizer()
    with BackgroundServer(_replica(tokenizer, "a")) as a, BackgroundServer(_replica(tokenizer, "b")) as b:
        routed: list[tuple[int, bool]] = []
        with BackgroundServer(round_robin_router([a.url, b.url], routed)) as router:
            yield router.url, a.url, b.url


def _run(out: Path, engine: str) -> int:
    return main(scraped_run_argv(out, engine, 8))


def test_every_replica_scraped_gives_the_fleets_figures(
    fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reports.markdown import markdown_summary
    from reports.report import build_report

    router, a, b = fleet
    out = tmp_path / "run"
    engine = f"http:url={router},router=round_robin,replicas=2,label=fleet,scrape={a}/metrics|{b}/metrics"
    assert _run(out, engine) == 0
    server = json.loads((out / "metrics.json").read_text())["engines"]["fleet"]["server"]
    hosts = {a.removeprefix("http://"): "a", b.removeprefix("http://"): "b"}
    assert set(server["replicas"]) == set(hosts)
    # every tick scrapes both replicas once, so over k ticks: 50k found of 110k looked up, whatever k is
    assert server["unknown"] == {} and server["prefix_cache"]["hit_rate"] == pytest.approx(50 / 110)
    ticks = server["prefix_cache"]["query_tokens"] / 110
    assert ticks >= 2 and ticks == int(ticks)
    for host, name in hosts.items():
        assert server["replicas"][host]["prefix_cache"]["hit_rate"] == pytest.approx(STEPS[name][3] / STEPS[name][1])
    assert server["running_peak"] == 2 and server["kv_usage_peak"] == pytest.approx(0.25)  # summed, averaged
    rows = [json.loads(line) for line in (out / "server" / "fleet-t0.jsonl").read_text().splitlines()]
    assert {r["replica"] for r in rows} == set(hosts) and all("router_replicas" not in r for r in rows)
    assert sum(r["replica"] == next(iter(hosts)) for r in rows) == len(rows) / 2  # each tick, both replicas
    line = next(x for x in capsys.readouterr().out.splitlines() if "prefix cache hit rate" in x)
    assert line.startswith("fleet: prefix cache hit rate 45.5% (server counters:"), line
    assert "45.5%" in markdown_summary(out)
    html = build_report([out])
    assert "requests running (server)" in html  # the server panels, one line per replica
    assert all(f"fleet {host}" in html for host in hosts)
    scrape = json.loads((out / "manifest.json").read_text())["engines"][0]["scrape"]
    assert scrape["replicas"] == {a.removeprefix("http://"): f"{a}/metrics", b.removeprefix("http://"): f"{b}/metrics"}


@pytest.mark.parametrize(
    ("scrape", "said"),
    [
        ("{a}/metrics|", "URL 2 of 2 is empty"),
        ("{a}/metrics||{b}/metrics", "URL 2 of 3 is empty"),
        ("{a}/metrics|{a}/metrics", "is given twice"),
        ("{a}/metrics|http://127.0.0.1:9/metrics", "--scrape http://127.0.0.1:9/metrics: unreachable"),
        ("{a}/metrics|{b}/metrics|{b}/", "3 URLs for replicas=2"),
        ("{a}/metrics|localhost:9/metrics", "must be http://"),
    ],
    ids=["empty-last", "empty-middle", "duplicate", "unreachable", "more-than-replicas", "not-a-url"],
)
def test_a_bad_scrape_list_is_one_line_before_any_work(
    fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str], scrape: str, said: str
) -> None:
    router, a, b = fleet
    out = tmp_path / "run"
    engine = f"http:url={router},router=round_robin,replicas=2,label=fleet,scrape={scrape.format(a=a, b=b)}"
    assert _run(out, engine) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    assert not (out / "records.jsonl").exists()  # refused before any request was sent
