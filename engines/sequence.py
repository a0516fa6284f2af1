"""A request's life inside an engine: its tokens, how many are in the KV cache, and its state."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from engines.api import Request


class SequenceStatus(enum.Enum):
    """Where a sequence is in its life inside an engine."""

    WAITING = "waiting"  # queued, never scheduled
    RUNNING = "running"  # holds KV blocks and a slot
    PREEMPTED = "preempted"  # lost its blocks; will be recomputed from its tokens when readmitted
    FINISHED = "finished"


class Tokens:
    """A prompt kept as its `range` and the tokens appended after it, read like the list of both: `len`,
    an index, a slice (a list), iteration, `append`, `extend` and `pop`. The simulator's stand-in prompts are
    ranges of large ints that only hashing (prefix caching) ever reads, so no list of them is built."""

    __slots__ = ("out", "prompt")

    def __init__(self, prompt: range) -> None:
        self.prompt, self.out = prompt, []

    def __len__(self) -> int:
        return len(self.prompt) + len(self.out)

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        prompt, out = self.prompt, self.out
        n = len(prompt)
        if isinstance(i, slice):
            start, stop, step = i.indices(n + len(out))
            if step != 1:
                return list(self)[i]
            return [*prompt[start:stop], *out[max(start - n, 0) : max(stop - n, 0)]]
        if i < 0:
            i += n + len(out)
            if i < 0:
                raise IndexError("token index out of range")
        return prompt[i] if i < n else out[i - n]

    def __iter__(self) -> Iterator[int]:
        yield from self.prompt
        yield from self.out

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Tokens) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Tokens({self.prompt!r}, {self.out!r})"

    def append(self, token_id: int) -> None:
        self.out.append(token_id)

    def extend(self, token_ids: Iterable[int]) -> None:
        self.out.extend(token_ids)

    def pop(self) -> int:
        if self.out:
            return self.out.pop()
        last, self.prompt = self.prompt[-1], self.prompt[:-1]
        return last


@dataclass(eq=False, slots=True)
class Sequence:
    """A request inside an engine: its tokens, how many are in the KV cache, its blocks and state."""

    request: Request
    seq_no: int  # engine-wide arrival order, the FCFS tie-breaker
    token_ids: list[int] | Tokens  # a `Tokens` when the prompt came as a `range` (the simulator's stand-ins)
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
        ids = request.prompt_token_ids
        prompt = Tokens(ids) if type(ids) is range and ids.step == 1 else list(ids)
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
