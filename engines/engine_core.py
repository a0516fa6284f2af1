"""The engine loop: one thread that turns scheduler plans into model steps and events.

Each iteration: take new requests and aborts (stage 1), ask the scheduler for a plan (stages 2, 3, 5),
run it through the model, let the scheduler remove finished sequences (stage 4), then publish events
and one `StepRecord`. The scheduler and runner it drives are the protocols of `engines/contract.py`.
Running off the asyncio loop keeps token timestamps honest: they are taken when the step that produced
the token ends, not when a busy event loop gets round to it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from engines.api import AdmitEvent, EngineEvent, FinishEvent, Request, StepSink, TokenEvent
from engines.compute_threads import enter_compute_thread
from engines.contract import Runner, Scheduler
from engines.plan import StepPlan
from engines.sequence import Sequence, SequenceStatus
from engines.step_features import StepFeatures, step_features
from engines.step_record import StepRecord

EventSink = Callable[[list[EngineEvent]], None]


class EngineCore:
    """The engine loop on its own thread: `submit` and `abort` from anywhere, events and step records out."""

    def __init__(
        self,
        scheduler: Scheduler,
        runner: Runner,
        *,
        blocks_total: Callable[[], int],
        blocks_used: Callable[[], int],
        step_delay_s: float = 0.0,
        slowdown: float = 0.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.scheduler = scheduler
        self.runner = runner
        self.clock = clock
        self.step_delay_s = step_delay_s  # injected slowdown, for calibrating regression gates
        self.slowdown = slowdown  # relative injected slowdown: each step spins for this share of its own time
        self._blocks_total = blocks_total
        self._blocks_used = blocks_used
        self._inbox: deque[tuple[str, Any]] = deque()
        self._wake = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._seq_no = 0
        self._step = 0
        self.event_sink: EventSink = lambda events: None
        self.step_sink: StepSink | None = None
        self.error: BaseException | None = None

    # -- called from any thread -------------------------------------------------------------
    def submit(self, request: Request) -> None:
        with self._wake:
            self._inbox.append(("add", request))
            self._wake.notify()

    def abort(self, request_id: str) -> None:
        with self._wake:
            self._inbox.append(("abort", request_id))
            self._wake.notify()

    def reset_prefix_cache(self, done: Callable[[], None]) -> None:
        """Forget every cached prefix, on the engine thread before its next step; then call `done`."""
        with self._wake:
            self._inbox.append(("reset", done))
            self._wake.notify()

    def start(self) -> None:
        self._stop = False  # an engine stopped after one run can serve the next
        self._thread = threading.Thread(target=self._run, name="batchmark-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()

    # -- the engine thread -----------------------------------------------------------------
    def _run(self) -> None:
        try:
            enter_compute_thread()  # inside the try: a bad thread count is an engine failure, not a silent death
            while True:
                with self._wake:
                    while not self._stop and not self._inbox and not self.scheduler.has_work():
                        self._wake.wait()
                    if self._stop:
                        return
                if not self.step():
                    self._idle_wait()
        except BaseException as exc:  # surface to the async side instead of dying silently
            self.error = exc
            self.event_sink([])

    def _idle_wait(self) -> None:
        now = self.clock()
        wakeup = self.scheduler.next_wakeup(now)
        with self._wake:
            if not self._inbox and not self._stop:
                self._wake.wait(None if wakeup is None else max(0.0, wakeup - now))

    def _take_inbox(self, now: float, events: list[EngineEvent]) -> None:
        """Stage 1: new requests become WAITING sequences; aborts leave at once."""
        with self._wake:
            items = list(self._inbox)
            self._inbox.clear()
        for kind, item in items:
            if kind == "add":
                seq = Sequence.from_request(item, self._seq_no, now)
                self._seq_no += 1
                self.scheduler.enqueue(seq)
                if seq.status is SequenceStatus.FINISHED:  # shed by admission control
                    events.append(self._finish_event(seq, now))
            elif kind == "reset":
                self.scheduler.blocks.reset()
                item()
            else:
                seq = self.scheduler.abort(item)
                if seq is not None:
                    events.append(self._finish_event(seq, now))

    def step(self) -> bool:
        """One iteration. Returns False when there was nothing to compute."""
        events: list[EngineEvent] = []
        t_start = self.clock()
        self._take_inbox(t_start, events)
        plan = self.scheduler.schedule(t_start)
        if not plan.chunks:
            if events:
                self.event_sink(events)
            return False
        features = step_features(plan)  # before the step moves each sequence's computed count
        sampled = self.runner.execute(plan)
        if self.slowdown:  # like slower compute: stays on its core (a sleep's wake-up adds more) without the GIL
            deadline = self.clock() + self.slowdown * (self.clock() - t_start)
            while self.clock() < deadline:
                time.sleep(0)
        if self.step_delay_s:
            time.sleep(self.step_delay_s)
        finished = self.scheduler.remove_finished(plan, sampled)
        t_end = self.clock()
        admitted: list[EngineEvent] = []
        tokens: list[EngineEvent] = []
        for chunk in plan.chunks:
            seq = chunk.seq
            if seq.admit_time is None:
                seq.admit_time = t_start
                admitted.append(AdmitEvent(seq.request_id, t_start))
            if chunk.yields_token and chunk.num_tokens:
                index = seq.num_output_tokens - 1
                reasoning = index < seq.request.reasoning_tokens  # `is_reasoning`, inline: once per token
                tokens.append(TokenEvent(seq.request_id, seq.token_ids[-1], index, t_end, reasoning))
        events += admitted  # every admission before any token: a request's admit precedes its first token
        events += tokens
        events.extend(self._finish_event(seq, t_end) for seq in finished)
        self.event_sink(events)
        if self.step_sink is not None:
            self.step_sink(self._step_record(plan, finished, t_start, t_end, features))
        self._step += 1
        return True

    @staticmethod
    def _finish_event(seq: Sequence, now: float) -> FinishEvent:
        return FinishEvent(
            seq.request_id,
            seq.finish_reason or "abort",  # type: ignore[arg-type]
            seq.num_prompt_tokens,
            seq.num_output_tokens,
            now,
            preemptions=seq.preemptions,
            error_type=seq.error_type,
            error_message=seq.error_message,
            retry_after_s=seq.retry_after_s,
            cached_tokens=seq.num_cached_tokens,
        )

    def _step_record(
        self, plan: StepPlan, finished: list[Sequence], t_start: float, t_end: float, features: StepFeatures
    ) -> StepRecord:
        return step_record(
            self._step,
            self.scheduler,
            plan,
            finished,
            t_start,
            t_end,
            self._blocks_used(),
            self._blocks_total(),
            features,
        )


def step_record(
    step: int,
    scheduler: Scheduler,
    plan: StepPlan,
    finished: list[Sequence],
    t_start: float,
    t_end: float,
    blocks_used: int,
    blocks_total: int,
    features: StepFeatures,
) -> StepRecord:
    """The record of one computed step; the simulator's engine loop writes the same ones."""
    computing = [c.seq.request.request_id for c in plan.chunks if c.num_tokens]
    slots = scheduler.max_slots
    return StepRecord(
        step=step,
        scheduler=scheduler.kind,
        t_start=t_start,
        t_end=t_end,
        phase=features.phase,
        batch_id=plan.batch_id,
        running_ids=computing,
        num_running=len(computing),
        max_slots=slots,
        tokens_computed=features.prefill_tokens + features.decode_seqs,
        padded_tokens=features.padded_rows,
        idle_slots=features.held_rows,  # held by finished members of a static batch
        empty_slots=max(0, slots - len(plan.chunks)),
        admitted=plan.admitted,
        finished=[seq.request.request_id for seq in finished],
        preempted=plan.preempted,
        waiting=len(scheduler.waiting),
        blocked_reason=plan.blocked_reason,
        kv_blocks_used=blocks_used,
        kv_blocks_free=blocks_total - blocks_used,
        kv_blocks_total=blocks_total,
        decisions=plan.decisions,
        prefill_tokens=features.prefill_tokens,
        prefill_chunks=features.prefill_chunks,
        decode_seqs=features.decode_seqs,
        attended_context=features.attended_context,
        kv_read_tokens=features.kv_read_tokens,
        sampled_rows=features.sampled_rows,
        decode_context=features.decode_context,
        prefill_self_pairs=features.prefill_self_pairs,
        prefill_context_pairs=features.prefill_context_pairs,
        pad_pairs=features.pad_pairs,
        prefix_cached_tokens=plan.cached_tokens,
        prefix_cached_blocks=scheduler.blocks.num_cached,
    )
