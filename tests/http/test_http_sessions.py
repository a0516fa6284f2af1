"""Multi-turn replay over HTTP: `batchmark serve` (its continuous engine, prefix caching on) answers every
turn of every session with the same prompt, output and cached token counts as the same engine in
process; the HTTP engine resets the server's prefix cache when it starts, so a second trial starts cold."""

from __future__ import annotations

import asyncio

import pytest

from engines.http import HttpEngine
from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.scheduler import ContinuousConfig
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from engines.serve.state import STATE
from harness.loadgen import Scenario, build_schedule, replay_engine
from harness.records import RequestRecord
from workloads.model import Workload
from workloads.sessions import SessionSource, Turn, session_requests

OPTIONS = EngineOptions(kind="continuous", kv=KVConfig(memory_mb=16), continuous=ContinuousConfig(max_running=8))


def tiny_sessions() -> Workload:
    turns = [
        Turn(
            f"s{s}",
            k,
            40 if k == 0 else 9,
            4,
            at_s=0.05 * s if k == 0 else 0.0,
            think_s=0.01 if k else 0.0,
            prefix_hash_ids=(5,) if k == 0 else (),
        )
        for s in range(3)
        for k in range(3)
    ]
    requests, notes = session_requests(turns)
    return Workload("tiny-sessions", requests, {"source": SessionSource().to_spec()}, notes)


def replay(engine, schedule) -> list[RequestRecord]:
    records: list[RequestRecord] = []
    asyncio.run(replay_engine(engine, schedule, Scenario("sessions"), records.append, label=engine.name))
    return records


def per_turn(records: list[RequestRecord]) -> dict[tuple[str, int], tuple]:
    return {(r.session, r.turn): (r.engine_prompt_tokens, r.output_tokens, r.error_type) for r in records}


@pytest.mark.slow
def test_multi_turn_over_http_counts_every_turn_as_in_process(embedded) -> None:
    workload = tiny_sessions()
    schedule = build_schedule(workload, embedded.vocab_size, embedded.special_token_ids, seed=0)
    local = replay(InProcessEngine(embedded, OPTIONS, name="local"), schedule)
    with BackgroundServer(lambda: make_app(InProcessEngine(embedded, OPTIONS), embedded.tokenizer, "m")) as server:
        first = HttpEngine(server.url, "m", name="http")
        remote = replay(first, schedule)
        again = HttpEngine(server.url, "m", name="http")
        second = replay(again, schedule)
        counted = server.app[STATE].metrics.prefix_cache_hit_tokens  # batchmark_prefix_cache_hit_tokens_total
    assert len(local) == len(remote) == 9
    assert per_turn(remote) == per_turn(local)
    assert all(r.error_type is None and r.output_tokens == 4 for r in remote)
    assert first.prefix_cache_reset == again.prefix_cache_reset == "reset"
    cached = {(r.session, r.turn): r.cached_tokens for r in remote}
    # a later turn always finds its history: the previous turn finished before it was sent
    assert all(cached[s, k] >= 512 for s in ("s0", "s1", "s2") for k in (1, 2))
    assert {k: v for k, v in cached.items() if k[1] > 0} == {
        (r.session, r.turn): r.cached_tokens for r in local if r.turn > 0
    }
    # the server's cache was reset when the second trial's engine started: its first turn 0 found nothing
    assert min(r.cached_tokens for r in second if r.turn == 0) == 0
    assert counted == sum(r.cached_tokens for r in remote + second)  # the Prometheus counter says the same
