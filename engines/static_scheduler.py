"""Static batching: form a batch, run it until its LAST sequence finishes, only then take new work.

Batch formation waits until `max_batch` requests are queued or the oldest has waited
`batch_timeout_s`. Every member gets KV blocks for its prompt plus max_tokens up front (a static batch
cannot grow). Prompts are right-padded to the longest one, and a member that finishes early keeps its
slot: it computes a pad row every step until the batch ends. Those pad rows are real compute thrown
away, recorded in the trace as padded tokens and `idle_slots` (slots held by finished members).
Stage 5 never happens: new work waits until the whole batch has ended.

Prefix caching (the same option and block manager as continuous batching): a member admitted with a
cached prefix starts computing after it, and the batch's prompts are padded to the longest UNcached
part. Static batching keeps it so that a comparison of the two batchings on a shared-prefix workload
measures batching, not a cache one side lacks; `prefix_caching=off` gives the classic static batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engines.block_manager import BlockManager
from engines.contract import abort_sequence, apply_step
from engines.plan import Chunk, StepPlan
from engines.policy import SchedulingPolicy
from engines.sequence import Sequence, SequenceStatus
from engines.stages import Stage


@dataclass(frozen=True)
class StaticConfig:
    """The limits of static batching. These defaults are the option table's too (`engines/options.py` reads
    them from here), so `--max-batch`, `static:max_batch=` and this field are one name with one default."""

    max_batch: int = 32
    batch_timeout_s: float = 0.05

    @classmethod
    def from_options(cls, o: Mapping[str, Any]) -> StaticConfig:
        """From checked option values (`max_batch`, `batch_timeout_ms`), as every engine kind builds it."""
        return cls(max_batch=o["max_batch"], batch_timeout_s=o["batch_timeout_ms"] / 1e3)


class StaticScheduler:
    """Request-level batching: one batch at a time, run to its slowest member (the `Scheduler` contract)."""

    kind = "static"

    def __init__(self, config: StaticConfig, policy: SchedulingPolicy, blocks: BlockManager, eos: int | None):
        self.config = config
        self.waiting = policy
        self.blocks = blocks
        self.eos = eos
        self.batch: list[Sequence] = []
        self.running: list[Sequence] = self.batch  # members that still hold a slot
        self._batch_id = -1
        # A running batch's chunks change only when a member finishes, so they are built then, not every
        # step (a simulated batch of hundreds of members decodes for hundreds of steps)
        self._chunks: list[Chunk] | None = None

    @property
    def max_slots(self) -> int:
        return self.config.max_batch

    def has_work(self) -> bool:
        return bool(self.batch) or len(self.waiting) > 0

    def next_wakeup(self, now: float) -> float | None:
        """While a batch is still forming, when the formation timeout of its oldest request fires."""
        head = self.waiting.peek()
        if self.batch or head is None:
            return None
        return head.enqueue_time + self.config.batch_timeout_s

    def enqueue(self, seq: Sequence) -> None:
        """Stage 1."""
        seq.status = SequenceStatus.WAITING
        self.waiting.add(seq)

    def schedule(self, now: float) -> StepPlan:
        """Stage 3 while a batch runs; otherwise stage 2, once the batch is full or its timeout fired."""
        if self.batch:
            return self._continue_batch()
        return self._form_batch(now)

    def _form_batch(self, now: float) -> StepPlan:
        plan = StepPlan()
        for seq in self.waiting.promote(now):
            plan.decide(Stage.FORM, "promote", seq, why="aging", waited_s=round(now - seq.enqueue_time, 4))
        head = self.waiting.peek()
        if head is None:
            return plan
        if len(self.waiting) < self.config.max_batch and now < head.enqueue_time + self.config.batch_timeout_s:
            plan.blocked_reason = "batch_forming"
            return plan
        blocks = self.blocks
        while (seq := self.waiting.peek()) is not None and len(self.batch) < self.config.max_batch:
            hit = blocks.match_prefix(seq)
            need = blocks.blocks_for_tokens(seq.max_total_tokens) - len(seq.block_table) - len(hit)
            if not blocks.can_allocate(need + blocks.reactivated(hit)):
                plan.blocked_reason = "kv_blocks"
                plan.decide(Stage.FORM, "defer", seq, why="kv_blocks", need_blocks=need, free_blocks=blocks.num_free)
                break
            self.waiting.pop()
            blocks.take_prefix(seq, hit)
            blocks.allocate(seq, need)
            cached = len(hit) * blocks.block_size
            seq.num_cached_tokens = cached
            seq.status = SequenceStatus.RUNNING
            self.batch.append(seq)
            plan.admitted.append(seq.request_id)
            plan.cached_tokens += cached
            plan.decide(Stage.FORM, "admit", seq, tokens=seq.num_uncomputed, blocks=need, cached=cached)
        if len(self.waiting) and plan.blocked_reason is None:
            plan.blocked_reason = "no_slot"
        self._batch_id += 1
        longest = max(seq.num_uncomputed for seq in self.batch)
        for seq in self.batch:
            plan.chunks.append(Chunk(seq, seq.num_uncomputed, yields_token=True, num_pad=longest - seq.num_uncomputed))
        plan.batch_id = self._batch_id
        return plan

    def _continue_batch(self) -> StepPlan:
        if self._chunks is None:
            done = SequenceStatus.FINISHED
            self._chunks = [
                Chunk(seq, 0, yields_token=False, num_pad=1)
                if seq.status is done
                else Chunk(seq, seq.num_uncomputed, yields_token=True)
                for seq in self.batch
            ]
        plan = StepPlan(chunks=list(self._chunks), batch_id=self._batch_id)
        if len(self.waiting):
            plan.blocked_reason = "batch_running"
        return plan

    def remove_finished(self, plan: StepPlan, sampled: list[int]) -> list[Sequence]:
        """Stage 4: a finished member's stream ends, but it keeps its slot and blocks until the batch ends."""
        finished = apply_step(plan, sampled, self.eos, self.waiting, self.blocks)
        if finished or plan.batch_id != self._batch_id or plan.admitted:
            self._chunks = None  # a member finished, or this was the formation step: the next plan differs
        for seq in finished:
            plan.decide(
                Stage.REMOVE,
                "finish",
                seq,
                why=seq.finish_reason,
                output_tokens=seq.num_output_tokens,
                slot_held_until_batch_ends=True,
            )
        self.end_batch_if_done()
        return finished

    def end_batch_if_done(self) -> None:
        """The batch ends with its last member: every slot and block it held is freed at once."""
        if self.batch and all(seq.status is SequenceStatus.FINISHED for seq in self.batch):
            for seq in self.batch:
                self.blocks.free(seq)
            self.batch.clear()

    def abort(self, request_id: str) -> Sequence | None:
        for seq in self.batch:
            if seq.request_id == request_id and seq.status is not SequenceStatus.FINISHED:
                seq.status, seq.finish_reason = SequenceStatus.FINISHED, "abort"
                self._chunks = None
                self.end_batch_if_done()
                return seq  # otherwise it keeps its slot (pad rows) until the batch ends
        return abort_sequence(request_id, [], self.waiting, self.blocks)
