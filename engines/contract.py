"""The contract between the engine loop (`engine_core.py`) and what it drives: a scheduler and a runner.

The loop owns time, threads and events; a scheduler owns the queue, the running set and the KV blocks;
a runner owns the model. One iteration of the loop:

    scheduler.enqueue(seq)                       stage 1, for each new request
    plan = scheduler.schedule(now)               stages 2, 3 and 5: what this step computes, and why
    sampled = runner.execute(plan)               the model: one token per chunk with `yields_token`
    finished = scheduler.remove_finished(plan, sampled)   stage 4

Any scheduler with these methods runs in the loop unchanged (continuous and static batching today); any
runner that turns a plan into sampled tokens can stand in for the model (tests, a cost model). The two
helpers below are the part of stage 3 and 4 both schedulers share: applying a step's tokens, and abort.
"""

from __future__ import annotations

from typing import Protocol

from engines.block_manager import BlockManager
from engines.plan import StepPlan
from engines.policy import SchedulingPolicy
from engines.sequence import Sequence, SequenceStatus


class Scheduler(Protocol):
    """Decides, step by step, which sequences compute how many tokens."""

    kind: str  # "continuous" or "static": written to every step record
    waiting: SchedulingPolicy  # the queue of WAITING (and PREEMPTED) sequences, in the policy's order
    running: list[Sequence]  # sequences holding a slot
    blocks: BlockManager  # the KV pool (and its prefix cache)

    @property
    def max_slots(self) -> int:
        """Sequences one step can hold: `max_running` or the batch size."""
        ...

    def has_work(self) -> bool:
        """Whether anything is queued or running."""
        ...

    def next_wakeup(self, now: float) -> float | None:
        """When the loop must look again though nothing arrives (a batch-forming timeout), or None."""
        ...

    def enqueue(self, seq: Sequence) -> None:
        """Stage 1: a new sequence joins the waiting queue."""
        ...

    def schedule(self, now: float) -> StepPlan:
        """Stages 2, 3 and 5: this step's chunks and every decision taken, with its reason."""
        ...

    def remove_finished(self, plan: StepPlan, sampled: list[int]) -> list[Sequence]:
        """Stage 4: apply the step's sampled tokens, then remove (or, static, park) what finished."""
        ...

    def abort(self, request_id: str) -> Sequence | None:
        """Take a sequence out at once, wherever it is; None when it is unknown or already gone."""
        ...


class Runner(Protocol):
    """Computes a plan: the model runner, or anything standing in for it."""

    def execute(self, plan: StepPlan) -> list[int]:
        """The next token of every chunk with `yields_token`, in chunk order."""
        ...


def apply_step(
    plan: StepPlan, sampled: list[int], eos: int | None, policy: SchedulingPolicy, blocks: BlockManager
) -> list[Sequence]:
    """Record what a step computed: advance each chunk's sequence, offer the full blocks it completed to
    the prefix cache (before a finished sequence frees them, so they stay cached), append sampled tokens;
    return the sequences that just finished."""
    finished: list[Sequence] = []
    tokens = iter(sampled)
    done = SequenceStatus.FINISHED
    # The hot loop (a simulated hour runs it four million times): a policy that keeps no account is not
    # called, a decode step that completes no block is not offered to the cache, and a request that ignores
    # EOS can only stop at its length, so `check_stop` runs only then.
    charge = policy.charge if policy.keeps_accounts else None
    block_size = blocks.block_size if blocks.prefix_caching else 0
    for chunk in plan.chunks:
        seq = chunk.seq
        if seq.status is done:
            continue  # a static batch's finished member computing pad rows
        num, start = chunk.num_tokens, seq.num_computed_tokens
        computed = seq.num_computed_tokens = start + num
        if block_size and computed // block_size > seq.num_committed_blocks:
            blocks.commit(seq)
        if charge is not None:
            prompt_left = seq.num_prompt_tokens - start
            charge(seq, 0 if prompt_left <= 0 else min(num, prompt_left), int(chunk.yields_token))
        if chunk.yields_token:
            seq.token_ids.append(next(tokens))  # `append_token`, inline
            seq.num_output_tokens += 1
            request = seq.request
            if not request.ignore_eos or seq.num_output_tokens >= request.max_tokens:
                reason = seq.check_stop(eos)
                if reason is not None:
                    seq.status = done
                    seq.finish_reason = reason
                    finished.append(seq)
    return finished


def abort_sequence(
    request_id: str, running: list[Sequence], waiting: SchedulingPolicy, blocks: BlockManager
) -> Sequence | None:
    """Remove a running or waiting sequence at once, returning its blocks."""
    seq = next((s for s in running if s.request_id == request_id), None)
    if seq is not None:
        running.remove(seq)
    else:
        seq = next((s for s in waiting if s.request_id == request_id), None)
        if seq is None:
            return None
        waiting.remove(seq)
    blocks.free(seq)
    seq.status, seq.finish_reason = SequenceStatus.FINISHED, "abort"
    return seq
