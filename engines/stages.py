"""The five stages of continuous batching, as one type. Every decision in the step trace names its stage.

    1 ENQUEUE  a request becomes a WAITING sequence in the policy's queue
               both: `enqueue`
    2 FORM     with nothing running, the first admissions form the group
               continuous: `fill_from_queue`; static: `_form_batch`
    3 ADVANCE  every running sequence gets its next token or prefill chunk
               continuous: `advance_running` (preempting when KV blocks run out); static: `_continue_batch`
    4 REMOVE   finished sequences leave and return their KV blocks
               both: `remove_finished` (static: the slot is held, padded, until the whole batch ends)
    5 FILL     freed slots, blocks and token budget go to waiting work in the same step
               continuous: `fill_from_queue`; static: never, new work waits for the whole batch

The engine loop (`engine_core.py`) runs stage 1 from its inbox, asks the scheduler for a plan (2, 3, 5),
runs the plan through the model and hands the sampled tokens back for stage 4.
"""

from __future__ import annotations

import enum


class Stage(enum.IntEnum):
    """A stage of the engine loop; written to the step trace as its number (1..5)."""

    ENQUEUE = 1
    FORM = 2
    ADVANCE = 3
    REMOVE = 4
    FILL = 5
