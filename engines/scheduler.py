"""Iteration-level (continuous) batching: the five stages, one engine step at a time.

    1. ENQUEUE  new requests join the policy's waiting queue as WAITING sequences
    2. FORM     when nothing runs, the first admissions form the batch
    3. ADVANCE  every running sequence gets its next token (or its next prefill chunk)
    4. REMOVE   finished sequences leave at once and return their KV blocks
    5. FILL     freed slots, blocks and token budget go to waiting work in the same iteration

Limits: `max_running` sequences, `max_batched_tokens` per step, and the block manager's free blocks.
With prefix caching, an admitted sequence starts at the end of its longest cached prefix (stage 5 takes
those blocks, shared and reference-counted) and every step's completed full blocks join the cache.
When a running sequence needs a block and none is free, the newest running sequence is preempted
(its blocks freed, to be recomputed from its tokens later) rather than failing.

Recovery controls, each off unless configured: SLO-aware admission at stage 1 (`admission.py`), starvation
aging in the queue (`aging.py`, built with the policy) and the fallback rule before each plan (`fallback.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.admission import AdmissionConfig, AdmissionGuard
from engines.block_manager import BlockManager
from engines.contract import abort_sequence, apply_step
from engines.fallback import FallbackConfig, FallbackRule
from engines.plan import Chunk, StepPlan
from engines.policy import SchedulingPolicy
from engines.sequence import Sequence, SequenceStatus
from engines.stages import Stage


@dataclass(frozen=True)
class ContinuousConfig:
    """The limits of continuous batching; the command-line defaults live in `engines/options.py`."""

    max_running: int = 32
    max_batched_tokens: int = 512  # small steps keep TPOT low while long prompts prefill (Sarathi)
    chunked_prefill: bool = True
    kv_watermark: float = 0.01  # share of blocks kept free at admission so running work can grow
    admission: AdmissionConfig | None = None  # SLO-aware admission (off: None)
    fallback: FallbackConfig | None = None  # the fallback rule (off: None)
    reserve_slots: int = 0  # slots only priority-0 requests may take (the most urgent SLO class)


class ContinuousScheduler:
    """Iteration-level batching: admits and removes sequences at every step (the `Scheduler` contract)."""

    kind = "continuous"

    def __init__(
        self, config: ContinuousConfig, policy: SchedulingPolicy, blocks: BlockManager, eos: int | None
    ) -> None:
        self.config = config
        self.admission = AdmissionGuard(config.admission) if config.admission else None
        self.fallback = FallbackRule(config.fallback) if config.fallback else None
        self.waiting = self.admission.wrap(policy) if self.admission else policy
        self.blocks = blocks
        self.eos = eos
        self.running: list[Sequence] = []  # admission order: the last one is the first to be preempted
        self.max_running = config.max_running  # the fallback rule may lower it
        self._watermark = int(config.kv_watermark * blocks.num_blocks)

    @property
    def max_slots(self) -> int:
        return self.max_running

    def has_work(self) -> bool:
        return bool(self.running) or len(self.waiting) > 0

    def next_wakeup(self, now: float) -> float | None:
        return None  # never waits on purpose: work is taken as soon as it exists

    def enqueue(self, seq: Sequence) -> None:
        """Stage 1 (with admission control: unless it is deferred or shed, then FINISHED at once)."""
        seq.status = SequenceStatus.WAITING
        if self.fallback is not None:
            self.fallback.enqueued(seq)
        admission = self.admission
        if admission is None or admission.check(
            seq, self.waiting, self.running, self.max_running, self.config.max_batched_tokens
        ):
            self.waiting.add(seq)

    def schedule(self, now: float) -> StepPlan:
        """Stage 3 for what runs, then stage 5 (or 2, when nothing ran) with the budget left."""
        plan = StepPlan()
        if self.fallback is not None:
            self.fallback.observe(now, self, plan)
        for seq in self.waiting.promote(now):
            plan.decide(Stage.FILL, "promote", seq, why="aging", waited_s=round(now - seq.enqueue_time, 4))
        budget = self.advance_running(plan, self.config.max_batched_tokens)
        self.fill_from_queue(plan, budget, Stage.FILL if self.running else Stage.FORM)
        if self.admission is not None:
            self.admission.after_step(plan, now)
        return plan

    def advance_running(self, plan: StepPlan, budget: int) -> int:
        """Stage 3: the next chunk of every running sequence, preempting the newest when blocks run out."""
        blocks, chunks, running = self.blocks, plan.chunks, SequenceStatus.RUNNING
        block_size = blocks.block_size
        for seq in list(self.running):  # oldest first, so preemption victims are not yet planned
            if seq.status is not running:
                continue
            computed = seq.num_computed_tokens
            uncomputed = len(seq.token_ids) - computed  # `num_uncomputed`, inline: four million times an hour
            num = uncomputed if uncomputed < budget else budget
            if num <= 0:
                plan.decide(Stage.ADVANCE, "defer", seq, why="token_budget")
                continue
            # most decode steps stay inside the blocks the sequence holds: no block arithmetic for them
            if computed + num > len(seq.block_table) * block_size:
                need = blocks.blocks_needed(seq, num)
                while not blocks.can_allocate(need):
                    victim = self.running[-1]
                    self.preempt(victim, plan)
                    if victim is seq:
                        break
                if seq.status is not running:
                    continue
                blocks.allocate(seq, need)
            chunks.append(Chunk(seq, num, num == uncomputed))  # positional: a keyword call costs half as much again
            budget -= num
        return budget

    def preempt(self, seq: Sequence, plan: StepPlan) -> None:
        """Free `seq`'s blocks and requeue it; it is recomputed from its tokens when readmitted."""
        self.blocks.free(seq)
        self.running.remove(seq)
        seq.num_computed_tokens = 0
        seq.status = SequenceStatus.PREEMPTED
        seq.preemptions += 1
        self.waiting.add(seq)
        plan.preempted.append(seq.request_id)
        plan.decide(Stage.ADVANCE, "preempt", seq, why="kv_blocks", free_blocks=self.blocks.num_free)

    def fill_from_queue(self, plan: StepPlan, budget: int, stage: Stage) -> None:
        """Stages 2 and 5: admit from the head of the queue until a slot, the budget or KV blocks run out.
        With prefix caching, the head's leading blocks found in the cache are taken, not computed."""
        blocks = self.blocks
        while (seq := self.waiting.peek()) is not None:
            hit = blocks.match_prefix(seq)
            cached = len(hit) * blocks.block_size
            uncomputed = seq.num_uncomputed - cached
            num = min(uncomputed, budget)
            need = blocks.blocks_for_tokens(seq.num_computed_tokens + cached + num) - len(seq.block_table) - len(hit)
            reason = None
            if len(self.running) >= self.max_running:
                reason = "no_slot"
            elif seq.request.priority > 0 and len(self.running) >= self.max_running - self.config.reserve_slots:
                reason = "reserved_slot"  # kept for the most urgent class; with a priority order none waits
            elif budget <= 0 or (num < uncomputed and not self.config.chunked_prefill):
                reason = "token_budget"
            elif not blocks.can_allocate(need + blocks.reactivated(hit) + (self._watermark if self.running else 0)):
                reason = "kv_blocks"
            if reason is not None:
                plan.blocked_reason = reason
                plan.decide(stage, "defer", seq, why=reason, need_blocks=need, free_blocks=blocks.num_free)
                return
            self.waiting.pop()
            blocks.take_prefix(seq, hit)
            blocks.allocate(seq, need)
            readmit = seq.status is SequenceStatus.PREEMPTED
            if seq.num_cached_tokens is None:
                seq.num_cached_tokens = min(cached, seq.num_prompt_tokens)
            seq.status = SequenceStatus.RUNNING
            self.running.append(seq)
            plan.chunks.append(Chunk(seq, num, yields_token=num == seq.num_uncomputed))
            plan.admitted.append(seq.request_id)
            plan.cached_tokens += cached
            plan.decide(stage, "readmit" if readmit else "admit", seq, tokens=num, blocks=need, cached=cached)
            budget -= num

    def remove_finished(self, plan: StepPlan, sampled: list[int]) -> list[Sequence]:
        """Stage 4: finished sequences leave at once and return their blocks."""
        finished = apply_step(plan, sampled, self.eos, self.waiting, self.blocks)  # commits before any free
        if self.admission is not None and finished:
            self.admission.finished(finished)
        for seq in finished:
            self.blocks.free(seq)
            self.running.remove(seq)
            plan.decide(Stage.REMOVE, "finish", seq, why=seq.finish_reason, output_tokens=seq.num_output_tokens)
        return finished

    def abort(self, request_id: str) -> Sequence | None:
        return abort_sequence(request_id, self.running, self.waiting, self.blocks)
