"""A static batch's finishing step, run without planning it: the step in which members reach their length.

Under load a static batch's decode runs (engines/sim/decode_run.py) are short: requests arrive between most
steps, and every member that finishes ends one. So about half of a static batch's steps finish someone, and the
step-by-step loop plans each of them anew (a chunk per member, its features, applying its tokens, a step record
from the plan). What that step does is known before it runs (`decode_run.static_steps` returns 0): every
member still running computes one decode row, every finished one a pad row in its held slot, and those whose
output reaches `max_tokens` finish ("length"; they ignore EOS). This runs it with the same calls and
arithmetic: the features `engines.step_features` counts for that plan priced by the cost model (noise, then
slowdown, then the gap, in the same order), `apply_step`'s per-member work and block commits in batch order,
`StaticScheduler.remove_finished`'s decisions and (when the last member finished) its frees in batch order, the
same finish events, the step record `engines.engine_core.step_record` writes, and `on_step`'s call.

Records, step traces and metrics come out byte for byte as without it (tests/sim/test_decode_run.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engines.sequence import SequenceStatus
from engines.sim.decode_run import SIM_TOKEN, Held
from engines.stages import Stage
from engines.static_scheduler import StaticScheduler
from engines.step_features import StepFeatures
from engines.step_record import StepRecord

if TYPE_CHECKING:
    from engines.sim.engine import SimEngine, StepCallback


def finishing_step(engine: SimEngine, on_step: StepCallback) -> bool:
    """Run the next step of `engine`'s static batch, in which members finish (`decode_run_steps` returned
    FINISHING); returns what `on_step` returned (pause?)."""
    scheduler = engine.scheduler
    assert isinstance(scheduler, StaticScheduler)
    blocks, batch, done = engine.blocks, scheduler.batch, SequenceStatus.FINISHED
    running = [seq for seq in batch if seq.status is not done]
    held = Held.of([seq for seq in batch if seq.status is done])
    n, h = len(running), held.rows
    context = sum(seq.num_computed_tokens for seq in running)
    keys = context + n + held.keys
    features = StepFeatures(0, 0, n, h, h, keys, context + held.context, n + h, keys)
    waiting = len(scheduler.waiting)
    t_start = engine.now
    t_end = t_start + engine.step_duration(features)
    # apply_step: each running member computes its row, offers the blocks it completed, takes its token
    block_size = blocks.block_size if blocks.prefix_caching else 0
    sampled: list[str] = []
    finished = []
    for seq in running:
        computed = seq.num_computed_tokens = seq.num_computed_tokens + 1
        if block_size and computed // block_size > seq.num_committed_blocks:
            blocks.commit(seq)
        seq.token_ids.append(SIM_TOKEN)
        seq.num_output_tokens += 1
        sampled.append(seq.request.request_id)
        if seq.num_output_tokens >= seq.request.max_tokens:
            seq.status, seq.finish_reason = done, "length"
            finished.append(seq)
    # remove_finished: the next plan differs; each finish decided; the batch ends with its last member
    scheduler._chunks = None
    decisions = [
        {
            "stage": Stage.REMOVE,
            "action": "finish",
            "id": seq.request.request_id,
            "why": "length",
            "output_tokens": seq.num_output_tokens,
            "slot_held_until_batch_ends": True,
        }
        for seq in finished
    ]
    scheduler.end_batch_if_done()
    events = engine._finish_events(finished, t_end)
    if engine.step_sink is not None:
        used, total, slots = blocks.num_used, blocks.num_blocks, scheduler.max_slots
        engine.step_sink(
            StepRecord(
                step=engine._step,
                scheduler=scheduler.kind,
                t_start=t_start,
                t_end=t_end,
                phase="decode",
                batch_id=scheduler._batch_id,
                running_ids=list(sampled),
                num_running=n,
                max_slots=slots,
                tokens_computed=n,
                padded_tokens=h,
                idle_slots=h,
                empty_slots=max(0, slots - n - h),
                admitted=[],
                finished=[seq.request.request_id for seq in finished],
                preempted=[],
                waiting=waiting,
                blocked_reason="batch_running" if waiting else None,
                kv_blocks_used=used,
                kv_blocks_free=total - used,
                kv_blocks_total=total,
                decisions=decisions,
                prefill_tokens=0,
                prefill_chunks=0,
                decode_seqs=n,
                attended_context=keys,
                kv_read_tokens=features.kv_read_tokens,
                sampled_rows=n + h,
                decode_context=keys,
                prefill_self_pairs=0,
                prefill_context_pairs=0,
                pad_pairs=0,
                prefix_cached_tokens=0,
                prefix_cached_blocks=blocks.num_cached,
            )
        )
    engine._step += 1
    engine.now = engine.next_start(t_end)
    return on_step(t_start, t_end, [], sampled, events)
