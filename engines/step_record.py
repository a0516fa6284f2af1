"""The step trace's one schema: what an engine writes for every step it computes (`steps/<engine>-t<trial>.jsonl`).

Engines own what they emit, so the record is defined here and every reader derives its columns from it:
`harness.metrics.frame.steps_frame` (pandas dtypes), `reports.steps` (the pyarrow schema), the docs and the
tests. On disk it is `StepRecord.to_json()`, one object per line with these keys in this order.

Field metadata, read by the readers: `required` marks a key without which a line is not a step record;
every other key a line lacks reads as its type's empty value (0, None, an empty list).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

REQUIRED = {"required": True}


# Not slotted: orjson serialises a plain dataclass through its __dict__, 2.6x faster than a slotted one
# (1.2 against 3.1 us a record), and a simulated hour writes half a million of them.
@dataclass
class StepRecord:
    """One engine step: the plan's shape, the resources it held, and every scheduler decision with its reason."""

    step: int  # 0, 1, 2, ... within one engine run
    scheduler: str  # "continuous" or "static"
    t_start: float = field(metadata=REQUIRED)  # before the inbox is read (stage 1)
    t_end: float = field(metadata=REQUIRED)  # after the model ran and finished sequences were removed
    phase: str = field(metadata=REQUIRED)  # "prefill", "decode" or "mixed" (`StepPlan.phase`)
    batch_id: int | None  # static batching: which batch this step belongs to
    running_ids: list[str]  # sequences that computed tokens this step
    num_running: int
    max_slots: int  # `max_running` or the static batch size
    tokens_computed: int  # real tokens (prefill chunks and decode rows)
    padded_tokens: int  # pad rows computed and thrown away (static batching's waste)
    idle_slots: int  # slots HELD by finished members of a static batch (computing pad rows)
    empty_slots: int  # slots FREE: nobody holds them
    admitted: list[str]
    finished: list[str]
    preempted: list[str]
    waiting: int  # queue length after this step's admissions
    blocked_reason: str | None  # why the head of the queue was not admitted: no_slot, kv_blocks, token_budget, ...
    kv_blocks_used: int
    kv_blocks_free: int
    kv_blocks_total: int
    # {"stage": 1..5 (`engines.stages.Stage`), "action": admit|readmit|defer|preempt|finish, "id": ..., "why": ...,
    # and the resources involved: tokens, blocks, need_blocks, free_blocks, output_tokens}
    decisions: list[dict[str, Any]]
    # What the step computed (`engines.step_features`, counted before it ran), for fitting step-time models;
    # its pad rows are `padded_tokens` and its held rows `idle_slots` above. Older traces read them as 0.
    prefill_tokens: int  # real tokens of prefill chunks
    prefill_chunks: int
    decode_seqs: int  # one-token chunks extending a sequence that has output
    attended_context: int  # (query row, key) pairs the attention computed
    kv_read_tokens: int  # cached context tokens the step read
    sampled_rows: int  # rows through the LM head
    decode_context: int  # keys read by one-row chunks (the paged kernel); the attention split by kernel:
    prefill_self_pairs: int  # pairs among prefill chunks' own rows, pad rows included
    prefill_context_pairs: int  # prefill chunk rows x the context before them (chunked prefill, prefix hits)
    pad_pairs: int  # of the prefill pairs, the pad rows'
    # Prefix caching: tokens this step's admissions took from the cache instead of computing (each
    # admission's share is its decision's `cached`), and blocks findable by hash after the step.
    prefix_cached_tokens: int
    prefix_cached_blocks: int

    def to_json(self) -> dict[str, Any]:
        """The line written to the trace (shallow: the lists are the record's own)."""
        return {name: getattr(self, name) for name in STEP_FIELDS}


STEP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(StepRecord))
