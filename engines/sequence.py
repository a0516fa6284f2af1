"""A request's life inside an engine: its tokens, how many are in the KV cache, and its state."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from engines.api import Request


class SequenceStatus(enum.Enum):
    """Where a sequence is in its life inside an engine."""

    WAITING = "waiting"  # queued, never scheduled
    RUNNING = "running"  # holds KV blocks and a slot
    PREEMPTED = "preempted"  # lost its blocks; will be recomputed from its tokens when readmitted
    FINISHED = "finished"


@dataclass(eq=False, slots=True)
class Sequence:
    """A request inside an engine: its tokens, how many are in the KV cache, its blocks and state."""

    request: Request
    seq_no: int  # engine-wide arrival order, the FCFS tie-breaker
    token_ids: list[int]
    num_prompt_tokens: int
    status: SequenceStatus = SequenceStatus.WAITING
    num_computed_tokens: int = 0  # tokens whose keys and values are in the cache
    block_table: list[int] = field(default_factory=list)
    block_hashes: list[int] = field(default_factory=list)  # chained hashes of its full token blocks (prefix caching)
    num_committed_blocks: int = 0  # leading blocks of `block_table` already offered to the prefix cache
    num_cached_tokens: int | None = None  # prompt tokens found in the prefix cache at first admission
    num_output_tokens: int = 0
    preemptions: int = 0
    enqueue_time: float = 0.0
    admit_time: float | None = None
    finish_reason: str | None = None
    service: float = 0.0  # tokens of compute received, weighted as in VTC (input 1, output 2)
    error_type: str | None = None  # why the engine refused it (admission control sheds with "slo_shed")
    error_message: str | None = None
    retry_after_s: float | None = None  # when shed: how long until the queue is predicted to have room

    @classmethod
    def from_request(cls, request: Request, seq_no: int, now: float) -> Sequence:
        prompt = list(request.prompt_token_ids)
        return cls(request, seq_no, prompt, len(prompt), enqueue_time=now)

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_uncomputed(self) -> int:
        return len(self.token_ids) - self.num_computed_tokens

    @property
    def max_total_tokens(self) -> int:
        return self.num_prompt_tokens + self.request.max_tokens

    def append_token(self, token_id: int) -> None:
        self.token_ids.append(token_id)
        self.num_output_tokens += 1

    def check_stop(self, eos_token_id: int | None) -> str | None:
        """Why this sequence is done after its latest token, or None."""
        last = self.token_ids[-1]
        if not self.request.ignore_eos:
            if eos_token_id is not None and last == eos_token_id:
                return "stop"
            if last in self.request.stop_token_ids:
                return "stop"
        if self.num_output_tokens >= self.request.max_tokens:
            return "length"
        return None
