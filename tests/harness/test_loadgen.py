"""The load generator's timing rules, record contents and stop rules, against small fake engines."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np

from engines.api import AdmitEvent, Engine, EngineEvent, FinishEvent, Request, TokenEvent
from engines.zero_engine import ZeroLatencyEngine
from harness.loadgen import Scheduled, StopRules, run_closed_loop, run_open_loop
from harness.records import RequestRecord


class SlowEngine(Engine):
    """Tokens every `gap_s`; with `serial`, one request at a time (a queue the harness cannot see)."""

    def __init__(self, gap_s: float = 0.01, serial: bool = False, fail: bool = False, crash: bool = False) -> None:
        self.gap_s, self.fail, self.crash = gap_s, fail, crash
        self.lock = asyncio.Lock() if serial else None
        self.aborted: list[str] = []

    async def start(self) -> None: ...
    async def stop(self) -> None: ...

    async def generate(self, request: Request) -> AsyncIterator[EngineEvent]:
        if self.crash:
            raise RuntimeError("engine bug")
        if self.lock is not None:
            await self.lock.acquire()
        try:
            yield AdmitEvent(request.request_id, time.perf_counter())
            if self.fail:
                yield FinishEvent(
                    request.request_id,
                    "error",
                    1,
                    0,
                    time.perf_counter(),
                    error_type="http_status",
                    error_message="503",
                )
                return
            for i in range(request.max_tokens):
                await asyncio.sleep(self.gap_s)
                if request.request_id in self.aborted:
                    yield FinishEvent(request.request_id, "abort", 1, i, time.perf_counter())
                    return
                yield TokenEvent(request.request_id, 5, i, time.perf_counter())
            yield FinishEvent(request.request_id, "length", 1, request.max_tokens, time.perf_counter())
        finally:
            if self.lock is not None:
                self.lock.release()

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)

    def describe(self) -> dict[str, Any]:
        return {"kind": "slow"}


def schedule(n: int, rate: float, max_tokens: int = 4) -> list[Scheduled]:
    return [Scheduled(Request(f"r{i}", [7, 8, 9], max_tokens, ignore_eos=True), i / rate) for i in range(n)]


def run(coro):
    return asyncio.run(coro)


def test_open_loop_records_every_request_with_its_schedule():
    items = schedule(200, rate=400.0, max_tokens=5)
    records: list[RequestRecord] = []
    outcome = run(run_open_loop(ZeroLatencyEngine(), items, records.append, label="zero"))
    assert outcome.records == 200 and outcome.errors == 0 and outcome.stopped_early is None
    by_id = {r.request_id: r for r in records}
    for item in items:
        r = by_id[item.request.request_id]
        assert abs(r.t_scheduled - item.at) < 1e-9  # the schedule itself, not when we got round to it
        assert r.t_sent >= r.t_scheduled
        assert r.output_tokens == r.engine_output_tokens == 5 == len(r.token_times)
        assert r.t_first_token == r.token_times[0] and r.t_finish >= r.token_times[-1]
        assert r.finish_reason == "length" and r.prompt_tokens == 3


def test_latency_is_measured_from_the_scheduled_arrival():
    """A serial engine queues requests out of the harness's sight: TTFT from the schedule shows the
    queueing (coordinated omission would hide it), and it is never shorter than TTFT from the send."""
    records: list[RequestRecord] = []
    run(run_open_loop(SlowEngine(gap_s=0.01, serial=True), schedule(10, rate=100.0), records.append, label="s"))
    ttft = np.array([r.t_first_token - r.t_scheduled for r in sorted(records, key=lambda r: r.t_scheduled)])
    assert ttft[-1] > 5 * ttft[0]  # the last request waited for the nine before it (4 tokens x 10 ms each)
    assert all(r.t_first_token - r.t_scheduled >= r.t_first_token - r.t_sent for r in records)


def test_closed_loop_never_exceeds_its_users():
    records: list[RequestRecord] = []
    outcome = run(
        run_closed_loop(
            SlowEngine(gap_s=0.005), schedule(30, rate=1e6), records.append, label="c", users=3, think_time_s=0.001
        )
    )
    assert outcome.records == 30
    events = sorted([(r.t_sent, 1) for r in records] + [(r.t_finish, -1) for r in records], key=lambda e: (e[0], e[1]))
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    assert peak == 3


def test_error_rate_stop_rule_ends_the_run_and_says_why():
    records: list[RequestRecord] = []
    rules = StopRules(max_error_rate=0.5, window=10, min_samples=10)
    outcome = run(
        run_open_loop(SlowEngine(fail=True), schedule(200, rate=1000.0), records.append, label="f", stop_rules=rules)
    )
    assert outcome.stopped_early is not None and outcome.stopped_early["rule"] == "max_error_rate"
    assert outcome.not_sent > 0 and len(records) == outcome.records < 200
    assert all(r.error_type == "http_status" for r in records)


def test_in_flight_stop_rule_aborts_what_is_running():
    records: list[RequestRecord] = []
    engine = SlowEngine(gap_s=0.05)
    outcome = run(
        run_open_loop(
            engine,
            schedule(100, rate=500.0, max_tokens=20),
            records.append,
            label="q",
            stop_rules=StopRules(max_in_flight=5),
        )
    )
    assert outcome.stopped_early["rule"] == "max_in_flight"
    assert engine.aborted and any(r.finish_reason == "abort" for r in records)
    assert len(records) == outcome.records == 100 - outcome.not_sent


def test_an_engine_exception_costs_one_record_not_the_run():
    records: list[RequestRecord] = []
    outcome = run(run_open_loop(SlowEngine(crash=True), schedule(5, rate=100.0), records.append, label="x"))
    assert outcome.records == 5
    assert {r.error_type for r in records} == {"engine_exception"}
    assert all("engine bug" in r.error_message for r in records)


def test_a_run_time_limit_ends_a_run_that_would_go_on_and_says_so():
    # 20 requests over 0.2 s, each 40 tokens x 50 ms = 2 s long, and a queue of one: without the limit this
    # takes 40 s. max_run_s ends it at 0.5 s: what is in flight is aborted and recorded, nothing is lost.
    records: list[RequestRecord] = []
    started = time.perf_counter()
    outcome = run(
        run_open_loop(
            SlowEngine(gap_s=0.05, serial=True),
            schedule(20, rate=100.0, max_tokens=40),
            records.append,
            label="d",
            stop_rules=StopRules(max_run_s=0.5),
        )
    )
    assert time.perf_counter() - started < 3.0  # a generous bound: the run would take 40 s without the rule
    assert outcome.stopped_early["rule"] == "max_run_s" and outcome.stopped_early["value"] >= 0.5
    # all 20 were due before the limit, but a starved event loop (eight test workers on a small machine) can
    # send late: what was not sent is counted, and everything sent is recorded; nothing is lost either way
    assert len(records) == outcome.records == 20 - outcome.not_sent and len(records) >= 1
    assert all(r.finish_reason == "abort" for r in records)  # none had finished its 40 tokens


def test_a_run_time_limit_stops_sending_what_is_due_after_it():
    records: list[RequestRecord] = []
    outcome = run(
        run_open_loop(
            SlowEngine(gap_s=0.001),
            schedule(50, rate=50.0, max_tokens=2),
            records.append,
            label="d",
            stop_rules=StopRules(max_run_s=0.3),
        )
    )
    assert outcome.stopped_early["rule"] == "max_run_s"
    assert 5 <= outcome.not_sent <= 40 and len(records) == 50 - outcome.not_sent
