"""Decode runs: a stretch of pure decode steps of continuous batching, run without planning each step.

Between two events that change the batch (an arrival, a finish), continuous batching repeats one step:
every running sequence computes one token. What the scheduler would decide in each such step is known
before it runs: nothing waits, so nothing is admitted or deferred; no sequence reaches its length, so
nothing finishes; the pool holds every block the sequences cross into, so nothing is preempted. Planning
each of those steps (a plan, a chunk per sequence, its features, applying its tokens: a few microseconds
per sequence) was most of a simulated hour's cost. Here the stretch runs as one loop over steps:

- the block manager is called exactly as the scheduler would call it, in the same order (stage 3: a block
  for each sequence crossing into a new one, in running order; stage 4: the full blocks each one completed
  offered to the prefix cache), so its state, evictions and counts are the step-by-step loop's;
- the cost model prices each step from the counts the plan would have had (n decode sequences whose
  contexts all grow by one a step), the noise draws are taken in the same order, and the clock advances
  by the same additions, so every time is the same float;
- each step's record is the one `engines.engine_core.step_record` writes for such a plan.

A static batch decodes the same way between its finishes, while its finished members hold their slots (a pad
row each, priced and recorded as `engines.step_features` counts them); its queue only grows meanwhile, and it
takes nothing from it until the batch ends. The step in which members of a static batch reach their length is
known in advance too: `engines.sim.static_step` runs it without a plan.

Records, step traces and metrics come out byte for byte as without it (tests/sim/test_decode_run.py).
Runs only where that is guaranteed (`decode_run_steps`); everything else takes the step-by-step loop.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from engines.block_manager import BlockManager
from engines.scheduler import ContinuousScheduler
from engines.sequence import Sequence, SequenceStatus
from engines.static_scheduler import StaticScheduler
from engines.step_features import StepFeatures
from engines.step_record import StepRecord

if TYPE_CHECKING:
    from engines.sim.engine import SimEngine

SIM_TOKEN = 0  # every simulated token: no model chooses tokens, and requests end at max_tokens
FINISHING = -1  # `decode_run_steps`: no decode run, but the next step is a static batch's known finishing step


def decode_run_steps(engine: SimEngine) -> int:
    """How many pure decode steps `engine` can run from now with every decision known in advance (0: none).
    The step in which a sequence reaches its length is left to the step-by-step loop (it finishes), except a
    static batch's: FINISHING when that step is next and `engines.sim.static_step` can run it."""
    scheduler = engine.scheduler
    if engine.options.aging_s is not None or engine.options.spec_decode is not None:  # a verify step emits 1 + A
        return 0
    if isinstance(scheduler, StaticScheduler):
        steps = static_steps(scheduler)
        return steps if steps > 0 else FINISHING if steps == 0 else 0
    if not isinstance(scheduler, ContinuousScheduler) or scheduler.fallback is not None:
        return 0
    if scheduler.admission is not None or len(scheduler.waiting):
        return 0
    running = scheduler.running
    n = len(running)
    if not n or n > scheduler.config.max_batched_tokens or scheduler.waiting.keeps_accounts:
        return 0
    steps = 1 << 62
    status = SequenceStatus.RUNNING
    for seq in running:
        request = seq.request
        # one uncomputed token (its last sampled one) and output already: a decode row, stopping only at its length
        if seq.status is not status or len(seq.token_ids) - seq.num_computed_tokens != 1:
            return 0
        if not seq.num_output_tokens or not request.ignore_eos:
            return 0
        left = request.max_tokens - seq.num_output_tokens - 1
        if left < steps:
            steps = left
    return max(steps, 0)


def static_steps(scheduler: StaticScheduler) -> int:
    """The pure decode steps a static batch has before its next finish (0: a member finishes in the next step;
    -1: a step not known in advance). Once formed, a batch takes no new work until it ends, so the queue does not
    matter (it only grows, between calls); its finished members hold their slots with a pad row each. Its KV
    blocks were all allocated at formation and the scheduler allocates none after, so a run (or a finishing
    step) whose tokens would not fit them is none."""
    batch = scheduler.batch
    if not batch or scheduler.waiting.keeps_accounts:  # none: still forming (its formation step is a prefill)
        return -1
    steps = 1 << 62
    running, done = SequenceStatus.RUNNING, SequenceStatus.FINISHED
    block_size = scheduler.blocks.block_size
    decoding = False
    for seq in batch:
        status = seq.status
        if status is done:
            continue
        request = seq.request
        computed = seq.num_computed_tokens
        if status is not running or len(seq.token_ids) - computed != 1:
            return -1
        if not seq.num_output_tokens or not request.ignore_eos:
            return -1
        left = request.max_tokens - seq.num_output_tokens - 1  # then its finishing step
        if left < 0 or computed + left + 1 > len(seq.block_table) * block_size:  # its tokens would need a block
            return -1
        if left < steps:
            steps = left
        decoding = True
    return steps if decoding else -1


def run_decode(engine: SimEngine, steps: int, until: float) -> tuple[list[str], list[float]]:
    """Run up to `steps` decode steps of `engine` that start before `until` (at least one: the caller checked
    `engine.now < until`); returns the running ids and each step's end, the token time of every one of them."""
    scheduler, blocks = engine.scheduler, engine.blocks
    held = Held()
    if isinstance(scheduler, StaticScheduler):  # a static batch's finished members: a pad row each, every step
        done = SequenceStatus.FINISHED
        running = [seq for seq in scheduler.batch if seq.status is not done]
        held = Held.of([seq for seq in scheduler.batch if seq.status is done])
    else:
        running = list(scheduler.running)
    n = len(running)
    bs = blocks.block_size
    # the step at which each sequence's token first starts a new block (then every block_size steps)
    first_grow = [len(seq.block_table) * bs - seq.num_computed_tokens for seq in running]
    free = blocks.num_free
    if sum(max(0, -(-(steps - j0) // bs)) for j0 in first_grow) > free:  # no preemption: stop before the first
        grows_at = sorted(j for j0 in first_grow for j in range(j0, steps, bs))  # step the pool could not grow
        steps = grows_at[free]
        if steps <= 0:
            return [], []
    ids = [seq.request.request_id for seq in running]
    attended = sum(seq.num_computed_tokens for seq in running)
    starts, ends = _clock(engine, n, attended, steps, until, held)  # before the block calls: it decides how many run
    ran = len(ends)
    # Stage 3 and 4 block calls of the steps that run, per step, in running order (the scheduler's order).
    grows: dict[int, list] = {}
    commits: dict[int, list] = {}
    caching = blocks.prefix_caching
    extra = [SIM_TOKEN] * ran
    for seq, j0 in zip(running, first_grow, strict=True):
        seq.token_ids.extend(extra)  # the tokens the commits hash (all SIM_TOKEN)
        for j in range(j0, ran, bs):
            grows.setdefault(j, []).append(seq)
        if caching:
            c = seq.num_computed_tokens
            j = max((seq.num_committed_blocks + 1) * bs - c - 1, 0)  # the first step completing a new full block
            while j < ran:
                commits.setdefault(j, []).append((seq, c + j + 1))
                j = ((c + j + 1) // bs + 1) * bs - c - 1
    sink = engine.step_sink
    if sink is None:  # only the block calls: in the steps that make them
        for j in sorted(j for j in grows.keys() | commits.keys() if j < ran):
            _block_calls(blocks, grows.get(j, ()), commits.get(j, ()))
    else:
        total = blocks.num_blocks
        template = _record_template(ids, n, scheduler, total, held)
        step = engine._step
        for j in range(ran):
            _block_calls(blocks, grows.get(j, ()), commits.get(j, ()))
            used, kv_read = blocks.num_used, attended + n * j
            record = StepRecord.__new__(StepRecord)
            record.__dict__.update(template)
            record.step, record.t_start, record.t_end = step + j, starts[j], ends[j]
            record.kv_blocks_used, record.kv_blocks_free = used, total - used
            record.attended_context, record.kv_read_tokens = kv_read + n + held.keys, kv_read + held.context
            record.decode_context = kv_read + n + held.keys
            record.prefix_cached_blocks = blocks.num_cached
            sink(record)  # type: ignore[misc]
    for seq in running:
        seq.num_computed_tokens = len(seq.token_ids) - 1
        seq.num_output_tokens += ran
    engine.now = starts[ran]  # the next step's start: the last end plus its gap
    engine._step += ran
    return ids, ends


class Held(NamedTuple):
    """A static batch's finished members, as `engines.step_features` counts them: each computes one pad row over
    its context (`keys`: at least one key a row; `context`: the cached tokens read), every step the same."""

    rows: int = 0
    keys: int = 0
    context: int = 0

    @classmethod
    def of(cls, members: list[Sequence]) -> Held:
        computed = [seq.num_computed_tokens for seq in members]
        context = sum(computed)
        return cls(len(computed), context + computed.count(0), context)  # max(c, 1) a row: c, or 1 for c = 0


def _block_calls(blocks: BlockManager, grows: Iterable[Sequence], commits: Iterable[tuple[Sequence, int]]) -> None:
    """One step's block calls: stage 3's new blocks (in running order), then stage 4's commits."""
    for seq in grows:
        blocks.allocate(seq, 1)
    for seq, computed in commits:
        seq.num_computed_tokens = computed
        blocks.commit(seq)


def _clock(
    engine: SimEngine, n: int, attended: int, steps: int, until: float, held: Held
) -> tuple[list[float], list[float]]:
    """Each step's start and end, for the steps of at most `steps` that start before `until` (starts has one
    more: where the step after the last would start). The step-by-step loop's arithmetic in its order: duration
    from the cost model (then noise, then slowdown, then the step's scale, `SimEngine.step_scale_of`), end = start +
    duration, next start = end + gap. A cost model that prices decode steps on arrays (the roofline), with no noise
    to draw, does it in numpy: the same IEEE operations in the same order (a cumulative sum adds one term at a
    time), so the same floats."""
    cost, options = engine.cost, engine.options
    noise, gap_noise, gap, slowdown = engine._step_noise, engine._gap_noise, options.step_gap_s, options.slowdown
    scale, shapes = options.step_scale, options.step_scale_shapes
    on_arrays = getattr(cost, "decode_step_times", None)
    now = engine.now
    if on_arrays is not None and noise is None and gap_noise is None and not held.rows:
        starts, ends, done, chunk = [now], [], 0, 32  # in growing chunks: most runs end at the next arrival
        while done < steps:
            k = min(chunk, steps - done)
            durations = on_arrays(n, attended + n * np.arange(done, done + k, dtype=np.int64))
            if slowdown:
                durations = durations * (1.0 + slowdown)
            if scale != 1.0 and shapes is None:
                durations = durations * scale
            elif scale != 1.0:  # step by step: a run's context may cross from one shape's band into the next
                kv_reads = range(attended + n * done, attended + n * (done + k), n)
                durations = durations * np.array([engine.step_scale_of(_decode(n, r, held)) for r in kv_reads])
            terms = np.empty(2 * k + 1)
            terms[0], terms[1::2], terms[2::2] = starts[-1], durations, gap
            clock = np.cumsum(terms).tolist()
            ran = bisect_left(clock[0 : 2 * k : 2], until)  # the chunk's steps that start before `until`
            starts += clock[2 : 2 * ran + 1 : 2]
            ends += clock[1 : 2 * ran : 2]
            done += ran
            if ran < k:
                break
            chunk *= 2
        return starts, ends
    starts, ends = [now], []
    while len(ends) < steps and now < until:
        t_end = now + engine.step_duration(_decode(n, attended + n * len(ends), held))
        ends.append(t_end)
        now = engine.next_start(t_end)
        starts.append(now)
    return starts, ends


def _decode(n: int, kv_read: int, held: Held) -> StepFeatures:
    """The features of a decode run's step: n decode rows over `kv_read` cached tokens, and the held pad rows."""
    h, h_keys, h_context = held
    keys = kv_read + n + h_keys
    return StepFeatures(0, 0, n, h, h, keys, kv_read + h_context, n + h, keys)


def _record_template(
    ids: list[str], n: int, scheduler: ContinuousScheduler | StaticScheduler, total: int, held: Held
) -> dict:
    """The fields every step of a decode run shares, in `StepRecord`'s order (orjson writes that order). A
    continuous run has nothing waiting; a static batch ignores its queue while it runs (`_continue_batch`)."""
    slots, h, waiting = scheduler.max_slots, held.rows, len(scheduler.waiting)
    static = isinstance(scheduler, StaticScheduler)
    batch_id = scheduler._batch_id if static else None  # type: ignore[union-attr]
    blocked = "batch_running" if static and waiting else None
    return {
        "step": 0,
        "scheduler": scheduler.kind,
        "t_start": 0.0,
        "t_end": 0.0,
        "phase": "decode",
        "batch_id": batch_id,
        "running_ids": ids,
        "num_running": n,
        "max_slots": slots,
        "tokens_computed": n,
        "padded_tokens": h,
        "idle_slots": h,
        "empty_slots": max(0, slots - n - h),
        "admitted": [],
        "finished": [],
        "preempted": [],
        "waiting": waiting,
        "blocked_reason": blocked,
        "kv_blocks_used": 0,
        "kv_blocks_free": 0,
        "kv_blocks_total": total,
        "decisions": [],
        "prefill_tokens": 0,
        "prefill_chunks": 0,
        "decode_seqs": n,
        "attended_context": 0,
        "kv_read_tokens": 0,
        "sampled_rows": n + h,
        "decode_context": 0,
        "prefill_self_pairs": 0,
        "prefill_context_pairs": 0,
        "pad_pairs": 0,
        "prefix_cached_tokens": 0,
        "prefix_cached_blocks": 0,
    }
