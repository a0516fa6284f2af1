"""The sessions scenario in real time with agentic turns: a turn's branches are sent together, and the next
turn waits for the last of them, then its think and tool time (harness/loadgen/sessions.py)."""

from __future__ import annotations

import asyncio

from engines.api import Request
from harness.loadgen import Scheduled
from harness.loadgen.sessions import by_turn, run_session_loop
from harness.records import RequestRecord
from tests.harness.test_loadgen import SlowEngine


def _item(rid: str, turn: int, tokens: int, pause: float = 0.0, branch: int = 0) -> Scheduled:
    return Scheduled(Request(rid, [7, 8, 9], tokens, ignore_eos=True), 0.0, "a", turn, pause, branch)


def test_branches_go_together_and_the_next_turn_waits_for_the_slowest() -> None:
    schedule = [
        _item("r0", 0, 2),
        _item("r1", 1, 2, pause=0.05),  # the main line: done after 2 tokens
        _item("r2", 1, 10, branch=1),  # a sub-agent: 10 tokens, the slowest of the turn
        _item("r3", 1, 4, branch=2),
        _item("r4", 2, 2, pause=0.03),
    ]
    assert [[i.request.request_id for i in stage] for stage in by_turn(schedule)] == [
        ["r0"],
        ["r1", "r2", "r3"],
        ["r4"],
    ]
    records: list[RequestRecord] = []
    asyncio.run(run_session_loop(SlowEngine(gap_s=0.01), schedule, records.append, label="slow"))
    at = {r.request_id: r for r in records}
    assert len(at) == 5 and all(r.error_type is None for r in records)
    sent = [at[rid].t_sent for rid in ("r1", "r2", "r3")]
    assert max(sent) - min(sent) < 0.01  # together
    assert min(sent) >= at["r0"].t_finish + 0.05 - 1e-3  # after turn 0 and its pause
    joined = max(at[rid].t_finish for rid in ("r1", "r2", "r3"))
    assert joined == at["r2"].t_finish  # the 10-token sub-agent finished last
    assert at["r4"].t_sent >= joined + 0.03 - 1e-3  # the join, then the tool time
