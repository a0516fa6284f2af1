"""Virtual-time scenarios: the load generator for engines that run on their own clock (the simulator).

The timing rules are the real-time scenarios' (`scenarios.py`), on the engine's virtual clock, with
no asyncio and no sleeping: a simulated hour replays in seconds.
- Open loop: request i arrives at `at_i`. The engine runs every step that starts before that instant
  (`run_until`), then takes the request; a step that is running when a request arrives delays it to the
  next step, as a real engine loop does. Send time equals scheduled time: there is no dispatcher to lag.
- Closed loop: a user sends its next request `think_time_s` after its previous one finished; the
  engine pauses after any step that finished a request so the next arrival is never late.
- Offline: every request arrives at t0.
The engine is known only through `VirtualTimeEngine`: submit at a time, run until a time, abort.
Record times are seconds on the virtual clock from its t0 = 0.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from engines.api import FinishEvent, Request
from harness.loadgen.scenarios import LoopOutcome, OnStart, Progress, RecordSink, Scenario, Scheduled, as_offered
from harness.loadgen.stop_rules import StopRules, StopState
from harness.records import RequestRecord, sent_record, set_finish, token_channels

PROGRESS_EVERY_S = 0.5

# (t_start, t_end, admitted ids, ids that got a token at t_end, finish events) -> pause?
StepCallback = Callable[[float, float, list[str], list[str], list[FinishEvent]], bool]
DecodeCallback = Callable[[list[str], list[float]], bool]  # (ids, each step's end) -> pause? (engines.sim.engine)


class VirtualTimeEngine(Protocol):
    """What the virtual-time load generator needs from an engine (engines.sim.SimEngine is one)."""

    virtual_time: bool
    now: float

    def submit(self, request: Request, at: float) -> FinishEvent | None: ...
    def run_until(self, until: float, on_step: StepCallback, on_decode: DecodeCallback | None = None) -> None: ...
    def abort(self, request_id: str) -> FinishEvent | None: ...


def is_virtual(engine: Any) -> bool:
    return bool(getattr(engine, "virtual_time", False))


class _VirtualRun:
    def __init__(
        self,
        engine: VirtualTimeEngine,
        label: str,
        trial: int,
        sink: RecordSink,
        stop_rules: StopRules | None,
        progress: Progress | None,
        total: int,
    ) -> None:
        self.started = time.perf_counter()  # the wall clock, for the outcome's simulation_wall_s
        self.engine = engine
        self.label = label
        self.trial = trial
        self.sink = sink
        self.stop = StopState(stop_rules or StopRules())
        self.progress = progress
        self.total = total
        self.records: dict[str, RequestRecord] = {}
        self.reasoning: dict[str, int] = {}  # request id -> its reasoning tokens, for those that have any
        self.times: dict[str, list[float]] = {}
        self.sent = self.done = self.errors = 0
        self.pausing = False  # closed loop: pause after every step that finished a request
        self.finished_now: list[tuple[float, str]] = []  # (finish time, request id) since last asked
        self._shown = time.perf_counter()

    def send(self, request: Request, at: float, user: int | None = None) -> None:
        record = sent_record(request, self.label, self.trial, at, at, user)
        self.records[request.request_id] = record
        self.times[request.request_id] = record.token_times
        if request.reasoning_tokens:  # simulated as ordinary decode: its first tokens are the reasoning
            self.reasoning[request.request_id] = request.reasoning_tokens
        self.sent += 1
        rejected = self.engine.submit(request, at)
        if rejected is not None:
            self.finish(rejected)
        if self.progress is not None and time.perf_counter() - self._shown > PROGRESS_EVERY_S:
            self._shown = time.perf_counter()
            self.progress(self.sent, self.done, self.errors, self.total)

    def on_step(
        self, t_start: float, t_end: float, admitted: list[str], sampled: list[str], finished: list[FinishEvent]
    ) -> bool:
        records, times = self.records, self.times
        for rid in admitted:
            records[rid].t_admitted = t_start
        for rid in sampled:
            times[rid].append(t_end)
        for event in finished:
            self.finish(event)
        return (self.pausing and bool(finished)) or self.stop.reason is not None

    def on_decode(self, ids: list[str], ends: list[float]) -> bool:
        """Steps that only gave every id in `ids` a token at each time of `ends` (nothing admitted or finished:
        no stop rule can have fired, so no pause)."""
        times = self.times
        for rid in ids:
            times[rid].extend(ends)
        return False

    def finish(self, event: FinishEvent) -> None:
        record = self.records.pop(event.request_id)
        del self.times[event.request_id]
        set_finish(record, event, event.time)
        record.replica = event.replica  # a simulated cluster's replica, and its P/D disaggregation times
        record.t_prefill_end, record.t_kv_arrived = event.t_prefill_end, event.t_kv_arrived
        times = record.token_times
        record.output_tokens = len(times)
        record.t_first_token = times[0] if times else None
        reasoning = self.reasoning.pop(event.request_id, 0)
        if reasoning:
            record.token_channels = token_channels(len(times), range(min(reasoning, len(times))))
        self.done += 1
        self.errors += record.error_type is not None
        if self.pausing:
            self.finished_now.append((event.time, event.request_id))
        self.sink(record)
        self.stop.observe(record)

    def stopped(self) -> bool:
        return self.stop.triggered(len(self.records), self.engine.now)

    def run_paced(
        self,
        ready: list[tuple[float, int]],
        remaining: int,
        send_due: Callable[[float, int], int],
        ready_after: Callable[[float, str], tuple[float, int] | None],
    ) -> None:
        """The clock of the closed loop and of the sessions scenario: senders (users, sessions) wait in
        `ready`, a heap of (ready at, sender). The engine runs until the first is ready, pausing after any step
        that finished a request; when nothing finished on the way, `send_due(at, sender)` sends what that
        sender has due and says how many requests it sent. Each finish asks `ready_after(t_finish, request id)`
        when (and whether) its sender is ready again. After the last send, what is in flight runs to its end."""
        engine = self.engine
        self.pausing = True
        while remaining and not self.stopped():
            if not ready:  # every sender waits for a response: run until one finishes
                engine.run_until(math.inf, self.on_step)
            else:
                at, sender = ready[0]
                engine.run_until(at, self.on_step)  # pauses early when a request finished on the way
                if engine.now >= at and not self.finished_now and self.stop.reason is None:
                    heapq.heappop(ready)
                    remaining -= send_due(at, sender)
            for t_finish, rid in self.finished_now:
                again = ready_after(t_finish, rid)
                if again is not None:
                    heapq.heappush(ready, again)
            self.finished_now.clear()
        self.pausing = False
        if not self.stopped():
            engine.run_until(math.inf, self.on_step)

    def outcome(self) -> LoopOutcome:
        if self.stop.reason is not None:  # what is in flight is aborted and recorded, as in real time
            for rid in list(self.records):
                event = self.engine.abort(rid)
                if event is not None:
                    self.finish(event)
        if self.progress is not None:
            self.progress(self.sent, self.done, self.errors, self.total)
        result = LoopOutcome(self.done, self.errors, self.engine.now, None, self.total - self.sent)
        if self.stop.reason is not None:
            result.stopped_early = {**self.stop.reason, "sent": self.sent, "not_sent": self.total - self.sent}
        result.simulation_wall_s = time.perf_counter() - self.started
        result.over_saturation_unjudged = self.stop.unjudged()
        return result


def run_virtual_open_loop(
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
    """Each request arrives at its scheduled virtual time; runs until every request finished (or a
    stop rule fired). `wall_time_s` of the outcome is the virtual time the engine took."""
    run = _VirtualRun(engine, label, trial, sink, stop_rules, progress, len(schedule))
    if on_start is not None:
        on_start(0.0)
    on_step, on_decode = run.on_step, run.on_decode  # an open loop never pauses on a step that finished nothing
    for item in schedule:
        engine.run_until(item.at, on_step, on_decode)
        if run.stopped():
            break
        run.send(item.request, item.at)
    if not run.stopped():
        engine.run_until(math.inf, on_step, on_decode)
    return run.outcome()


def run_virtual_closed_loop(
    engine: VirtualTimeEngine,
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
) -> LoopOutcome:
    """`users` users, each sending its next request `think_time_s` after its previous one finished.
    Requests go to users round-robin in list order (user u sends requests u, u + users, ...), as in the
    real-time closed loop, so a simulated run pairs with a measured one on (request, user)."""
    run = _VirtualRun(engine, label, trial, sink, stop_rules, progress, len(schedule))
    if on_start is not None:
        on_start(0.0)
    users = max(1, users)
    queues = [iter(schedule[u::users]) for u in range(users)]  # each user's own requests, in list order
    left = [len(schedule[u::users]) for u in range(users)]
    ready: list[tuple[float, int]] = [(0.0, u) for u in range(min(users, len(schedule)))]  # (ready at, user)
    user_of: dict[str, int] = {}

    def send_next(at: float, user: int) -> int:
        item = next(queues[user])
        left[user] -= 1
        user_of[item.request.request_id] = user
        run.send(item.request, at, user)
        return 1

    def thought(t_finish: float, rid: str) -> tuple[float, int] | None:  # its think time after the answer
        user = user_of.pop(rid, None)
        return (t_finish + think_time_s, user) if user is not None and left[user] else None

    run.run_paced(ready, len(schedule), send_next, thought)
    return run.outcome()


def run_virtual_scenario(
    engine: VirtualTimeEngine,
    schedule: list[Scheduled],
    sink: RecordSink,
    scenario: Scenario,
    *,
    label: str,
    trial: int = 0,
    stop_rules: StopRules | None = None,
    progress: Progress | None = None,
    on_start: OnStart | None = None,
) -> LoopOutcome:
    """`schedule` offered to a virtual-time engine as `scenario` says."""
    common: dict[str, Any] = {
        "label": label,
        "trial": trial,
        "stop_rules": stop_rules,
        "progress": progress,
        "on_start": on_start,
    }
    schedule = as_offered(scenario, schedule)
    if scenario.kind == "closed":
        return run_virtual_closed_loop(
            engine, schedule, sink, users=scenario.users, think_time_s=scenario.think_time_s, **common
        )
    return run_virtual_open_loop(engine, schedule, sink, **common)
