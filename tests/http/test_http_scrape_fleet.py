"""Issue #35: a scrape whose counters come from different servers (a router passing each scrape to one of its
replicas) printed a hit rate of "-0.0% (0 of -1128)". Counters that go backwards between scrapes, and a URL the
engine spec names as a router's, make the scraped figures n/a with the reason, the same in every output."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from scraped_server import embedded_tokenizer, scraped_run_argv, scripted_metrics_app

from engines.serve.background import BackgroundServer
from harness.cli import main
from harness.metrics.server_series import WENT_BACKWARDS, behind_router

pytestmark = pytest.mark.slow  # the CLI end to end

# two servers' counters, as a router passes one scrape to each replica in turn: A has counted 1200 prompt tokens
# looked up in its prefix cache, B 72 (the 0 of -1128)
COUNTERS = ((1200, 0, 3), (72, 0, 0))


def _two_servers_scraped():
    turn = itertools.count()

    def alternate() -> str:
        queries, hits, preemptions = COUNTERS[next(turn) % 2]
        return (
            f"vllm:prefix_cache_queries_total {queries}\nvllm:prefix_cache_hits_total {hits}\n"
            f"vllm:num_preemptions_total {preemptions}\nvllm:num_requests_running 1\n"
        )

    return alternate


@pytest.fixture(scope="module")
def server():
    with BackgroundServer(scripted_metrics_app(embedded_tokenizer(), _two_servers_scraped())) as s:
        yield s


@pytest.mark.parametrize(
    ("fleet", "reason"),
    [("", WENT_BACKWARDS), (",router=round_robin,replicas=2", behind_router(2))],
    ids=["counters-backwards", "router-url"],
)
def test_counters_of_two_servers_are_n_a_with_the_reason_everywhere(
    server, tmp_path: Path, capsys: pytest.CaptureFixture[str], fleet: str, reason: str
) -> None:
    from reports.markdown import markdown_summary
    from reports.report import build_report

    out = tmp_path / "run"
    engine = f"http:url={server.url}{fleet},label=h"
    assert main(scraped_run_argv(out, engine, 6)) == 0
    said = f"n/a ({reason})"
    console = next(x for x in capsys.readouterr().out.splitlines() if "prefix cache hit rate" in x)
    assert console.startswith(f"h: prefix cache hit rate {said}")
    summary = json.loads((out / "metrics.json").read_text())["engines"]["h"]["server"]
    assert summary["prefix_cache"] is None and summary["preemptions"] is None  # never a negative delta
    assert summary["unknown"]["prefix_cache"] == reason == summary["unknown"]["preemptions"]
    assert said in markdown_summary(out)
    html = build_report([out])
    assert said.replace("'", "&#x27;") in html and "-0.0%" not in html
    # gauges are one server's at a time: a restart leaves them known, a router's mix of replicas does not
    assert (summary["running_peak"] is None) == bool(fleet)
    assert ("requests running (server)" in html) != bool(fleet)
