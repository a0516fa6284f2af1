"""The sessions scenario: multi-turn conversations, closed within a session and open across sessions.

Timing rules: a session's turn 0 is due at `t0 + at` whatever happened before (as in the open loop:
latency is measured from that scheduled time, coordinated-omission-safe). Turn k is due when turn k-1's
answer has finished and the turn's think time has passed; its scheduled time is that moment, so its lag
is ~0. A turn that failed still lets the session go on: the history is the workload's, not the answer.
An agentic turn of several branches (a main request and its sub-agents) is sent at once, and the next turn
waits for all of them (the join) and then its think and tool time.
In real time each session is one asyncio task; in virtual time (the simulator) sessions wait in a heap
of ready times, as the closed loop's users do.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Iterable

from harness.collector import collector_paused
from harness.loadgen.scenarios import (
    LEAD_IN_S,
    LoopOutcome,
    OnStart,
    Progress,
    RecordSink,
    Scheduled,
    _finish,
    _Run,
    _sleep_until,
    _ticker,
)
from harness.loadgen.stop_rules import StopRules, StopState
from harness.loadgen.virtual import VirtualTimeEngine, _VirtualRun
from harness.records import RequestRecord


def by_session(schedule: Iterable[Scheduled]) -> list[list[Scheduled]]:
    """The schedule's sessions, each its turns in order; a request without a session is a session of one."""
    groups: dict[str, list[Scheduled]] = {}
    for item in schedule:
        groups.setdefault(item.session if item.session is not None else f"\0{item.request.request_id}", []).append(item)
    return list(groups.values())


def by_turn(turns: list[Scheduled]) -> list[list[Scheduled]]:
    """A session's turns, each the list of its branches (one for a turn without fan-out)."""
    stages: list[list[Scheduled]] = []
    for item in turns:
        if stages and item.branch and stages[-1][0].turn == item.turn:
            stages[-1].append(item)
        else:
            stages.append([item])
    return stages


def tag_sessions(sink: RecordSink, schedule: list[Scheduled]) -> RecordSink:
    """A sink that writes each record's session and turn (from the schedule) before passing it on."""
    where = {item.request.request_id: (item.session, item.turn) for item in schedule if item.session is not None}
    if not where:
        return sink

    def tagged(record: RequestRecord) -> None:
        record.session, record.turn = where.get(record.request_id, (None, None))
        sink(record)

    return tagged


async def run_session_loop(
    engine,
    schedule: list[Scheduled],
    sink: RecordSink,
    *,
    label: str,
    trial: int = 0,
    stop_rules: StopRules | None = None,
    progress: Progress | None = None,
    on_start: OnStart | None = None,
    t0: float | None = None,
) -> LoopOutcome:
    """Every session as its own task: turn 0 on schedule, each later turn its think time after the last
    answer. `t0`: the perf_counter() instant to start at (shards of one schedule start together)."""
    run = _Run(engine, label, trial, sink, StopState(stop_rules or StopRules()))
    sessions = by_session(schedule)

    async def send(item: Scheduled, first: bool) -> None:
        now = time.perf_counter()
        run.sent += 1
        task = asyncio.current_task()
        assert task is not None
        run.in_flight[item.request.request_id] = task
        await run.drive(item, run.t0 + item.at if first else now, now)
        run.in_flight.pop(item.request.request_id, None)

    async def session(turns: list[Scheduled]) -> None:
        await _sleep_until(run.t0 + turns[0].at)
        for k, stage in enumerate(by_turn(turns)):
            if k and stage[0].think_s > 0:
                await asyncio.sleep(stage[0].think_s)
            if run.stop.triggered(len(run.in_flight)):
                return
            if len(stage) == 1:
                await send(stage[0], k == 0)
            else:  # the branches together, joined before the next turn
                await asyncio.gather(*(send(item, k == 0) for item in stage))

    with collector_paused(collect_first=True):
        run.begin(time.perf_counter() + LEAD_IN_S if t0 is None else t0, on_start)
        ticker = _ticker(run, len(schedule), progress)
        await asyncio.gather(*(asyncio.create_task(session(turns)) for turns in sessions))
        return await _finish(run, len(schedule), ticker)


def run_virtual_session_loop(
    engine: VirtualTimeEngine,
    schedule: list[Scheduled],
    sink: RecordSink,
    *,
    label: str,
    trial: int = 0,
    stop_rules: StopRules | None = None,
    progress: Progress | None = None,
    on_start: OnStart | None = None,
) -> LoopOutcome:
    """The sessions scenario on a virtual clock: a heap of (ready time, session)."""
    run = _VirtualRun(engine, label, trial, sink, stop_rules, progress, len(schedule))
    if hasattr(engine, "set_sessions"):  # a simulated cluster's session_sticky router routes by conversation
        engine.set_sessions({i.request.request_id: i.session for i in schedule if i.session is not None})
    if on_start is not None:
        on_start(0.0)
    sessions = [by_turn(turns) for turns in by_session(schedule)]
    next_turn = [0] * len(sessions)
    open_branches = [0] * len(sessions)  # requests of the session's current turn not yet finished
    joined = [0.0] * len(sessions)  # the latest finish among the current turn's branches
    ready: list[tuple[float, int]] = [(stages[0][0].at, s) for s, stages in enumerate(sessions)]
    heapq.heapify(ready)
    session_of: dict[str, int] = {}

    def send_turn(at: float, s: int) -> int:  # the session's next turn, its branches together
        stage = sessions[s][next_turn[s]]
        next_turn[s] += 1
        open_branches[s] = len(stage)
        for item in stage:
            session_of[item.request.request_id] = s
            run.send(item.request, at)
        return len(stage)

    def joined_turn(t_finish: float, rid: str) -> tuple[float, int] | None:
        # the last of a turn's branches to finish joins it: the next turn is its think time after the join
        s = session_of.pop(rid, -1)
        if s < 0:
            return None
        open_branches[s] -= 1
        joined[s] = max(joined[s], t_finish)
        if open_branches[s] == 0 and next_turn[s] < len(sessions[s]):
            return (joined[s] + sessions[s][next_turn[s]][0].think_s, s)
        return None

    run.run_paced(ready, len(schedule), send_turn, joined_turn)
    return run.outcome()
