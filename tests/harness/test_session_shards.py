"""Sharded load generation keeps every session on one worker (its turns depend on each other)."""

from __future__ import annotations

from engines.api import Request
from harness.loadgen import Scenario, Scheduled
from harness.shards.split import split_schedule


def test_sessions_are_dealt_out_whole() -> None:
    schedule = [Scheduled(Request(f"r{i}", [1, 2], 1), float(i), session=f"s{i % 3}", turn=i // 3) for i in range(9)]
    shards, split_by = split_schedule(schedule, 2, Scenario("sessions"))
    assert split_by == "session"
    owners = {item.session: shard.worker for shard in shards for item in shard.schedule}
    for shard in shards:
        assert all(owners[item.session] == shard.worker for item in shard.schedule)
        turns = [(item.session, item.turn) for item in shard.schedule]
        assert turns == sorted(turns, key=lambda t: (t[1], t[0]))  # each session's turns stay in order
    assert sorted(len(s.schedule) for s in shards) == [3, 6]
