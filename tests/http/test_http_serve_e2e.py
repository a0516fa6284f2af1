"""`batchmark serve` as a real process: end to end against in process, the probe's verdicts, SIGTERM.

End to end: load generator -> HTTP engine -> `batchmark serve --engine continuous` -> continuous
engine, against the same continuous engine in this process on the same open-loop schedule: the
same tokens and counts for every request. The timing bound (median TTFT within `TTFT_OVERHEAD_LIMIT_S`,
5 ms, the stated overhead of HTTP + SSE + a second process; median TPOT within 30%) is a benchmark,
run by `make bench`; the transport alone costs ~0.9 ms, see test_http_overhead.py.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import numpy as np
import pandas as pd
import pytest

from engines.api import Engine, EngineEvent, Request, TokenEvent
from engines.http import HttpEngine
from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.scheduler import ContinuousConfig
from harness.loadgen import Scheduled, run_open_loop
from harness.metrics.frame import records_frame
from harness.metrics.latency import request_latencies
from harness.probe import ProbeConfig, format_result, run_probe
from tests.http.serve_process import ServeProcess

pytestmark = pytest.mark.slow

MODEL = "e2e-model"
KV_MB = 16
TTFT_OVERHEAD_LIMIT_S = 0.005  # the stated bound on the median extra TTFT over HTTP
SPACING_S = 0.1  # light open-loop load (requests overlap little): the comparison is about the transport


@pytest.fixture(scope="module")
def servers():
    common = ("--served-model-name", MODEL, "--kv-memory-mb", str(KV_MB), "--threads", "1")
    procs = {
        "continuous": ServeProcess(*common, "--engine", "continuous", "--max-running", "16"),
        "static": ServeProcess(*common, "--engine", "static", "--max-batch", "16", "--batch-timeout-ms", "20"),
        "serial": ServeProcess(*common, "--engine", "static", "--max-batch", "1"),  # no batching at all
    }
    try:
        for proc in procs.values():
            proc.wait_ready()
        yield procs
    finally:
        for proc in procs.values():
            proc.stop()


# -- end to end -------------------------------------------------------------------------------------
class Recording(Engine):
    """Passes events through and keeps each request's token ids."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name = inner.name
        self.tokens: dict[str, list[int]] = {}

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def generate(self, request: Request) -> AsyncIterator[EngineEvent]:
        ids = self.tokens.setdefault(request.request_id, [])
        async for event in self.inner.generate(request):
            if isinstance(event, TokenEvent):
                ids.append(event.token_id)
            yield event

    async def abort(self, request_id: str) -> None:
        await self.inner.abort(request_id)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def workload(count: int = 14, seed: int = 7) -> list[Scheduled]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        prompt = rng.integers(3, 8000, size=int(rng.integers(8, 48))).tolist()
        out.append(Scheduled(Request(f"e{i:02d}", prompt, int(rng.integers(4, 17)), ignore_eos=True), i * SPACING_S))
    return out


def drive(engine: Engine, schedule: list[Scheduled]) -> tuple[pd.DataFrame, dict[str, list[int]]]:
    recording = Recording(engine)

    async def go():
        records = []
        await recording.start()
        try:
            await run_open_loop(recording, schedule, records.append, label=engine.name)
        finally:
            await recording.stop()
        return records

    records = asyncio.run(go())
    return records_frame(records).sort_values("request_id").reset_index(drop=True), recording.tokens


def compare_once(url: str, embedded, schedule: list[Scheduled]) -> tuple[float, float, float, str]:
    """One HTTP run and one in-process run of `schedule`; checks their outcomes are identical and returns
    (median extra TTFT, in-process TPOT, HTTP TPOT, summary line)."""
    remote, remote_tokens = drive(HttpEngine(url, MODEL, return_token_ids=True, name="http"), schedule)
    continuous = ContinuousConfig(max_running=16)
    options = EngineOptions(kind="continuous", kv=KVConfig(memory_mb=KV_MB), continuous=continuous)
    local, local_tokens = drive(InProcessEngine(embedded, options, name="continuous"), schedule)

    # the same requests, the same outcome, token for token (the server built the same seeded model)
    assert remote_tokens == local_tokens
    for column in (
        "request_id",
        "output_tokens",
        "prompt_tokens",
        "engine_output_tokens",
        "engine_prompt_tokens",
        "finish_reason",
        "max_tokens",
    ):
        assert remote[column].tolist() == local[column].tolist(), column
    assert remote["error_type"].isna().all() and local["error_type"].isna().all()
    assert [len(t) for t in remote["token_times"]] == remote["output_tokens"].tolist()

    lat_local, lat_remote = request_latencies(local), request_latencies(remote)
    extra = (lat_remote["ttft"] - lat_local["ttft"]).to_numpy()
    tpot_local, tpot_remote = float(lat_local["tpot"].median()), float(lat_remote["tpot"].median())
    line = (
        f"TTFT median {lat_local['ttft'].median() * 1e3:.2f} -> {lat_remote['ttft'].median() * 1e3:.2f} ms, "
        f"extra median {statistics.median(extra) * 1e3:.2f} ms (p90 {np.percentile(extra, 90) * 1e3:.2f}); "
        f"TPOT median {tpot_local * 1e3:.2f} -> {tpot_remote * 1e3:.2f} ms"
    )
    return float(statistics.median(extra)), tpot_local, tpot_remote, line


def test_http_run_matches_in_process_run(servers, embedded):
    """Records over HTTP equal those in process, token for token (compare_once asserts it); the overhead
    is printed here and held to its bound by the benchmark below. The server's engine worker is forked from
    it with the model loaded (not spawned to load it again): these tokens are that worker's."""
    assert any("(forked with the model)" in line for line in servers["continuous"].lines)
    # 8 requests: equality is checked request by request (the benchmark keeps 14 for its median overhead)
    (attempt,) = attempts_until_within(servers["continuous"].url, embedded, workload(8), tries=1)
    print(f"\nE2E over HTTP vs in process: {attempt[3]}")


@pytest.mark.bench
def test_http_overhead_within_bound(servers, embedded):
    """Median extra TTFT over HTTP within `TTFT_OVERHEAD_LIMIT_S`, median TPOT within 30% (`make bench`).

    Other processes on a shared 2-core machine only ever add latency, and they add more to the HTTP
    path (three processes must be scheduled instead of one), so the overhead is judged on the best of
    up to three alternating attempts; the outcomes must be identical in every attempt.
    """
    schedule = workload()
    attempts = attempts_until_within(servers["continuous"].url, embedded, schedule, tries=3)
    print(f"\nE2E over HTTP vs in process ({len(schedule)} requests, {SPACING_S * 1e3:.0f} ms apart):")
    for i, attempt in enumerate(attempts):
        print(f"  attempt {i}: {attempt[3]}")
    extra, tpot_local, tpot_remote, _ = next((a for a in attempts if within_overhead(a)), min(attempts))
    assert extra <= TTFT_OVERHEAD_LIMIT_S
    assert abs(tpot_remote - tpot_local) <= max(0.002, 0.3 * tpot_local)


def attempts_until_within(
    url: str, embedded, schedule: list[Scheduled], tries: int
) -> list[tuple[float, float, float, str]]:
    from engines import compute_threads

    threads = compute_threads.count()
    compute_threads.configure(1)  # as the server (--threads 1): equal compute on both sides
    try:
        drive(HttpEngine(url, MODEL, name="warm-up"), schedule[:2])  # first-request costs (connections, caches)
        attempts = []
        for _ in range(tries):
            attempts.append(compare_once(url, embedded, schedule))
            if within_overhead(attempts[-1]):
                break
    finally:
        compute_threads.configure(threads)
    return attempts


def within_overhead(attempt: tuple[float, float, float, str]) -> bool:
    extra, tpot_local, tpot_remote, _ = attempt
    return extra <= TTFT_OVERHEAD_LIMIT_S and abs(tpot_remote - tpot_local) <= max(0.002, 0.3 * tpot_local)


def test_abort_over_http_frees_kv_in_the_server_process(servers):
    url = servers["continuous"].url

    async def metrics() -> dict[str, float]:
        async with aiohttp.ClientSession() as session, session.get(url + "/metrics") as response:
            text = await response.text()
        return {k: float(v) for k, _, v in (line.rpartition(" ") for line in text.splitlines() if line[:1] != "#")}

    async def go():
        engine = HttpEngine(url, MODEL)
        await engine.start()
        try:
            before = (await metrics()).get('batchmark_requests_finished_total{reason="abort"}', 0.0)
            async for event in engine.generate(Request("long", list(range(5, 40)), 900, ignore_eos=True)):
                if isinstance(event, TokenEvent) and event.index == 3:
                    assert (await metrics())["batchmark_kv_blocks_used"] > 0
                    await engine.abort("long")
            for _ in range(500):
                after = await metrics()
                if after["batchmark_kv_blocks_used"] == 0:
                    break
                await asyncio.sleep(0.01)
            return event, before, after
        finally:
            await engine.stop()

    last, before, after = asyncio.run(go())
    assert last.reason == "abort"
    assert after["batchmark_kv_blocks_used"] == 0
    assert after['batchmark_requests_finished_total{reason="abort"}'] == before + 1


# -- probe ------------------------------------------------------------------------------------------
PROBE = {
    "rounds": 3,
    "long_requests": 2,
    "long_tokens": 48,
    "short_requests": 3,
    "short_tokens": 4,
    "warmup_tokens": 6,
    "timeout_s": 60.0,
}


@pytest.mark.parametrize("kind", ["continuous", "static", "serial"])
def test_probe_tells_static_from_continuous_and_serial(servers, kind):
    verdicts = []
    for _ in range(5):
        result = asyncio.run(run_probe(ProbeConfig(url=servers[kind].url, **PROBE)))
        print("\n" + format_result(result))
        verdicts.append((result.verdict, round(result.confidence, 3)))
    # A probe may say it cannot tell when the machine's noise hides the pattern (seen once in a clean-clone run:
    # the first probe after three servers started, confidence 0.71); it must never name the wrong kind.
    said = [v for v, _ in verdicts]
    assert set(said) <= {kind, "inconclusive"} and said.count(kind) >= 4, verdicts


# -- SIGTERM (last: they stop the servers) ------------------------------------------------------------
def test_sigterm_drains_running_requests_then_exits_0(servers):
    server = servers["static"]

    async def go():
        engine = HttpEngine(server.url, MODEL)
        await engine.start()

        async def late_request():
            async with aiohttp.ClientSession() as session:  # wait until the server has handled the signal
                for _ in range(1000):
                    async with session.get(server.url + "/health") as health:
                        if health.status == 503:
                            break
                    await asyncio.sleep(0.01)
            return [e async for e in engine.generate(Request("late", [7, 8, 9], 5, ignore_eos=True))]

        try:
            events, late = [], None
            async for event in engine.generate(Request("drain", [7, 8, 9], 200, ignore_eos=True)):
                events.append(event)
                if isinstance(event, TokenEvent) and event.index == 2:
                    server.proc.send_signal(signal.SIGTERM)
                    late = asyncio.create_task(late_request())
            assert late is not None
            return events, await late
        finally:
            await engine.stop()

    events, late = asyncio.run(go())
    code, output = server.stop(signalled=True)  # the one SIGTERM above must be enough to exit
    assert events[-1].reason == "length" and events[-1].output_tokens == 200  # drained, not cut
    refused = late[-1]
    assert (refused.reason, refused.error_type) == ("error", "http_status")
    assert refused.error_message.startswith("HTTP 503") and "shutting down" in refused.error_message
    assert refused.time < events[-1].time  # refused while the running request was still streaming
    assert code == 0, output
    assert "draining 1 requests" in output and "stopped\n" in output


def test_second_sigterm_aborts_the_drain(servers):
    server = servers["continuous"]
    max_tokens = 1900  # fits the KV cache; a full drain would stream all of them

    async def go():
        engine = HttpEngine(server.url, MODEL)
        await engine.start()
        try:
            events = []
            async for event in engine.generate(Request("cut", [7, 8, 9], max_tokens, ignore_eos=True)):
                events.append(event)
                if isinstance(event, TokenEvent) and event.index == 2:
                    server.proc.send_signal(signal.SIGTERM)
                elif isinstance(event, TokenEvent) and event.index == 40:
                    server.proc.send_signal(signal.SIGTERM)  # the operator insists
            return events
        finally:
            await engine.stop()

    events = asyncio.run(go())
    code, output = server.stop(signalled=True)
    assert events[-1].output_tokens < max_tokens and events[-1].reason != "length"  # cut, not drained
    assert code == 0, output
    assert "second signal: aborting 1 requests" in output and "stopped with requests still running" in output
