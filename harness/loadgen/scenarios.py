"""The load generator: replays a schedule against one engine through the one engine interface.

The scenario is a run setting (as MLPerf LoadGen keeps it in its test settings, apart from the sample
library); a workload may only suggest one. Timing rules, explicit per scenario:
- open: request i is due at `t0 + at_i` whatever happened before. Latency is measured from that
  scheduled time (coordinated-omission-safe) and also from the actual send; their difference, the
  schedule lag, is recorded per request. A late dispatcher sends at once and never skips.
- closed: `users` users each send their next request when their previous one finished and their
  think time passed; the scheduled time is then the moment the user was ready, so lag is ~0. Requests
  go to users round-robin in list order (user u sends requests u, u + users, ...), as fixed sessions, so
  two runs of one workload give each user the same requests: records carry the user, and runs pair on
  (request, user) even though their times differ.
- offline: every request is due at `t0` (throughput capacity; latency is not the question).
- sessions: multi-turn conversations, open across sessions and closed within one (`sessions.py`).
The clock is `time.perf_counter()` (monotonic, sub-microsecond); record times are seconds from `t0`.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from engines.api import AdmitEvent, Engine, FinishEvent, Request, TokenEvent
from harness.collector import collector_paused, full_collection
from harness.loadgen.stop_rules import StopRules, StopState
from harness.records import RequestRecord, sent_record, set_finish, token_channels

# asyncio's timers fire no better than ~1 ms late (epoll takes milliseconds), so the dispatcher sleeps
# until this long before a request is due and yields in a tight loop for the rest.
SPIN_S = 0.002
LEAD_IN_S = 0.05
# The automatic garbage collector stops the world for milliseconds at random moments, which shows up
# as schedule lag; during a run it is off and the dispatcher collects young objects when it has slack.
GC_SLACK_S = 0.02  # t0 lies this far after the run starts, so setup never makes the first request late


@dataclass(frozen=True)
class Scheduled:
    """A request and when it is due: seconds after t0 (open loop); ignored by the closed and offline loops."""

    request: Request
    at: float
    session: str | None = None  # the sessions scenario: the conversation, its turn, the pause before it
    turn: int = 0
    think_s: float = 0.0  # think and tool time together: the wait after the previous turn's join
    branch: int = 0  # a turn's branches are sent together and joined before the next turn


@dataclass(frozen=True)
class Scenario:
    """How the schedule is offered: open (on time), closed (`users` users thinking `think_time_s`) or offline."""

    kind: Literal["open", "closed", "offline", "sessions"] = "open"
    users: int = 1
    think_time_s: float = 0.0

    @classmethod
    def suggested_by(cls, workload: Any) -> Scenario:
        """What a workload suggests: closed when its spec has a `[closed_loop]` section, sessions when its
        requests are turns of sessions, else open."""
        if workload.closed_loop_users:
            return cls("closed", workload.closed_loop_users, workload.think_time_s)
        if any(r.session is not None for r in workload.requests):
            return cls("sessions")
        return cls("open")

    @property
    def on_schedule(self) -> bool:
        """Whether every engine sees each request at the same scheduled time (so runs pair by request)."""
        return self.kind not in ("closed", "sessions")


@dataclass
class LoopOutcome:
    """How one engine run of the load generator ended."""

    records: int = 0
    errors: int = 0
    wall_time_s: float = 0.0
    stopped_early: dict[str, Any] | None = None
    not_sent: int = 0
    simulation_wall_s: float | None = None  # virtual-time engines: wall_time_s is virtual, this is real
    over_saturation_unjudged: str | None = None  # why --stop-over-saturated never judged the run (None: it did)


RecordSink = Callable[[RequestRecord], None]
Progress = Callable[[int, int, int, int], None]  # sent, done, errors, total
OnStart = Callable[[float], None]  # told t0 before the first request goes out
# t0 given by the caller (a perf_counter() instant): shards of one schedule on several workers start together


@dataclass
class _Run:
    engine: Engine
    label: str
    trial: int
    sink: RecordSink
    stop: StopState
    t0: float = 0.0
    sent: int = 0
    done: int = 0
    errors: int = 0
    in_flight: dict[str, asyncio.Task] = field(default_factory=dict)
    watchdog: asyncio.Task | None = None  # ends the run at StopRules.max_run_s
    progress: Callable[[], None] | None = None  # reports the counts now

    def begin(self, t0: float, on_start: OnStart | None) -> None:
        """Fix `t0`, the perf_counter() instant record times count from: the stop rules' clock starts with it,
        and the caller is told it before the first request goes out."""
        self.t0 = t0
        self.stop.start(t0)
        if on_start is not None:
            on_start(t0)

    async def drive(self, item: Scheduled, scheduled: float, sent: float, user: int | None = None) -> None:
        request = item.request
        record = sent_record(request, self.label, self.trial, scheduled - self.t0, sent - self.t0, user)
        times = record.token_times
        reasoning_at: list[int] = []  # positions of reasoning tokens: most requests have none
        t0 = self.t0
        try:
            async for event in self.engine.generate(request):
                if isinstance(event, TokenEvent):
                    if event.reasoning:
                        reasoning_at.append(len(times))
                    times.append(event.time - t0)
                elif isinstance(event, AdmitEvent):
                    record.t_admitted = event.time - t0
                elif isinstance(event, FinishEvent):
                    set_finish(record, event, event.time - t0)
                    record.replica_id = event.replica_id  # a real fleet's replica names itself (HTTP)
                    record.server_ttft_s, record.server_queue_s = event.server_ttft_s, event.server_queue_s
        except asyncio.CancelledError:
            record.finish_reason, record.error_type = "abort", "stopped"
            record.error_message = "the run was stopped before this request finished"
            record.t_finish = time.perf_counter() - t0
        except Exception as exc:  # an engine bug must cost one record, not the run
            record.finish_reason, record.error_type = "error", "engine_exception"
            record.error_message = f"{type(exc).__name__}: {exc}".splitlines()[0]
            record.t_finish = time.perf_counter() - t0
        record.output_tokens = len(times)
        record.t_first_token = times[0] if times else None
        record.token_channels = token_channels(len(times), reasoning_at)
        self.done += 1
        self.errors += record.error_type is not None
        self.sink(record)
        self.stop.observe(record)


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.perf_counter() - SPIN_S
    if delay > GC_SLACK_S:
        gc.collect(1)  # young generations only, and only when the next request is far off
        delay = deadline - time.perf_counter() - SPIN_S
    if delay > 0:
        await asyncio.sleep(delay)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0)


async def run_open_loop(
    engine: Engine,
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
    """Send each request at its scheduled time; wait for all of them (or a stop rule) to finish. `t0`: the
    perf_counter() instant the schedule starts at (default: just after the garbage is collected)."""
    run = _Run(engine, label, trial, sink, StopState(stop_rules or StopRules()))
    with collector_paused(collect_first=True):  # before t0 is fixed: that full collection can take 100+ ms
        run.begin(time.perf_counter() + LEAD_IN_S if t0 is None else t0, on_start)
        return await _open_loop(run, schedule, progress)


async def _open_loop(run: _Run, schedule: list[Scheduled], progress: Progress | None) -> LoopOutcome:
    ticker = _ticker(run, len(schedule), progress)
    run.watchdog = _deadline(run)
    for item in schedule:
        due = run.t0 + item.at
        await _sleep_until(due)
        if run.stop.triggered(len(run.in_flight)):
            break
        task = asyncio.create_task(run.drive(item, due, time.perf_counter()))
        run.sent += 1
        run.in_flight[item.request.request_id] = task
        task.add_done_callback(lambda _t, rid=item.request.request_id: run.in_flight.pop(rid, None))
    return await _finish(run, len(schedule), ticker)


async def run_closed_loop(
    engine: Engine,
    schedule: list[Scheduled],
    sink: RecordSink,
    *,
    label: str,
    users: int,
    think_time_s: float = 0.0,
    trial: int = 0,
    stop_rules: StopRules | None = None,
    progress: Progress | None = None,
    on_start: OnStart | None = None,
    t0: float | None = None,
) -> LoopOutcome:
    """`users` concurrent users, each sending the next request once its previous one is done (from `t0`,
    a perf_counter() instant, when given)."""
    run = _Run(engine, label, trial, sink, StopState(stop_rules or StopRules()))
    full_collection()
    if t0 is not None:
        await _sleep_until(t0)
    run.begin(time.perf_counter() if t0 is None else t0, on_start)
    ticker = _ticker(run, len(schedule), progress)
    users = max(1, users)
    run.watchdog = _deadline(run)

    async def user(index: int) -> None:
        for item in schedule[index::users]:  # this user's own requests, in list order
            now = time.perf_counter()
            if run.stop.triggered(len(run.in_flight)):
                return
            run.sent += 1
            task = asyncio.current_task()
            assert task is not None
            run.in_flight[item.request.request_id] = task
            await run.drive(item, now, now, user=index)
            run.in_flight.pop(item.request.request_id, None)
            if think_time_s > 0:
                await asyncio.sleep(think_time_s)

    with collector_paused(collect_first=True):
        await asyncio.gather(*(asyncio.create_task(user(i)) for i in range(users)))
        return await _finish(run, len(schedule), ticker)


async def run_scenario(
    engine: Engine,
    schedule: list[Scheduled],
    sink: RecordSink,
    scenario: Scenario,
    *,
    label: str,
    trial: int = 0,
    stop_rules: StopRules | None = None,
    progress: Progress | None = None,
    on_start: OnStart | None = None,
    t0: float | None = None,
) -> LoopOutcome:
    """Offer `schedule` to `engine` as `scenario` says (offline: an open loop with every request due at t0)."""
    common: dict[str, Any] = {
        "label": label,
        "trial": trial,
        "stop_rules": stop_rules,
        "progress": progress,
        "on_start": on_start,
        "t0": t0,
    }
    schedule = as_offered(scenario, schedule)
    if scenario.kind == "closed":
        return await run_closed_loop(
            engine, schedule, sink, users=scenario.users, think_time_s=scenario.think_time_s, **common
        )
    return await run_open_loop(engine, schedule, sink, **common)


def as_offered(scenario: Scenario, schedule: list[Scheduled]) -> list[Scheduled]:
    """`schedule` as the open or closed loop (real or virtual time) is to offer it under `scenario`: offline,
    every request due at t0. The sessions scenario has loops of its own."""
    if scenario.kind == "sessions":
        raise ValueError("the sessions scenario runs in harness.loadgen.sessions (replay_engine picks it)")
    if scenario.kind == "offline":
        return [replace(item, at=0.0) for item in schedule]
    return schedule


def _ticker(run: _Run, total: int, progress: Progress | None) -> asyncio.Task | None:
    if progress is None:
        return None
    run.progress = lambda: progress(run.sent, run.done, run.errors, total)

    async def tick() -> None:
        while True:
            progress(run.sent, run.done, run.errors, total)
            await asyncio.sleep(0.5)

    return asyncio.create_task(tick())


def _deadline(run: _Run) -> asyncio.Task | None:
    """With `max_run_s`, a task that ends the run when the time is up: the dispatcher stops sending (its
    stop check fires the rule) and whatever is in flight is aborted and recorded as stopped."""
    if run.stop.remaining() is None:
        return None

    async def watch() -> None:
        while not run.stop.triggered(len(run.in_flight)):
            await asyncio.sleep(min(run.stop.remaining() or 0.0, 1.0) + 0.001)
        for rid in list(run.in_flight):
            await run.engine.abort(rid)

    return asyncio.create_task(watch())


async def _finish(run: _Run, total: int, ticker: asyncio.Task | None) -> LoopOutcome:
    stopped = run.stop.reason
    if stopped is not None:
        # a stop rule fired: nothing more is sent, and what is in flight is aborted and recorded
        for rid in list(run.in_flight):
            await run.engine.abort(rid)
    while run.in_flight:
        pending = [t for t in run.in_flight.values() if t is not asyncio.current_task()]
        if not pending:
            break
        done, _ = await asyncio.wait(pending, timeout=30.0 if stopped else None)
        if stopped and not done:
            for task in pending:
                task.cancel()
    for task in (ticker, run.watchdog):
        if task is not None:
            task.cancel()
    if run.progress is not None:
        run.progress()  # the final count
    outcome = LoopOutcome(run.done, run.errors, time.perf_counter() - run.t0, None, total - run.sent)
    stopped = run.stop.reason  # max_run_s may have fired while the last requests were in flight
    if stopped is not None:
        outcome.stopped_early = {**stopped, "sent": run.sent, "not_sent": total - run.sent}
    outcome.over_saturation_unjudged = run.stop.unjudged()
    return outcome
