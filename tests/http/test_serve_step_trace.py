"""`batchmark serve --step-trace FILE`: the served engine's steps as a step trace, one line per step."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from engines.http.scrape_names import parse_prometheus
from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from engines.step_record import STEP_FIELDS
from harness.cli import main

pytestmark = pytest.mark.slow  # loads the embedded model


def fetch(url: str, body: dict | None = None) -> str:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().decode()


def test_every_step_is_a_line_and_metrics_count_the_same_steps(embedded, tmp_path: Path) -> None:
    trace = tmp_path / "traces" / "replica.jsonl"  # its folder is made
    engine = InProcessEngine(embedded, EngineOptions(kv=KVConfig(memory_mb=8)))
    with BackgroundServer(lambda: make_app(engine, embedded.tokenizer, "m", step_trace=trace)) as server:
        body = {"model": "m", "prompt": "a b c", "max_tokens": 4, "ignore_eos": True}
        assert json.loads(fetch(server.url + "/v1/completions", body))["choices"]
        text = fetch(server.url + "/metrics")
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    # /metrics was read as the response ended, perhaps before the last step's record; the trace, after shutdown
    assert len(rows) >= parse_prometheus(text)["batchmark_step_seconds_count"] >= 2
    assert set(rows[0]) == set(STEP_FIELDS)
    assert sum(r["prefill_tokens"] for r in rows) >= 3 and all(r["t_end"] >= r["t_start"] for r in rows)


def test_a_step_trace_that_is_a_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0", "--step-trace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--step-trace" in err and "Traceback" not in err, err
