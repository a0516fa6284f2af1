"""What the scheduler decided for one engine step: the chunks to compute, and every decision with its reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engines.sequence import Sequence
from engines.stages import Stage


@dataclass(slots=True)
class Chunk:
    """`num_tokens` tokens of `seq` computed this step, starting at its `num_computed_tokens`."""

    seq: Sequence
    num_tokens: int
    yields_token: bool  # the chunk reaches the end of the sequence, so its last row yields a new token
    num_pad: int = 0  # pad rows computed beside it and thrown away (static batching's waste)


@dataclass
class StepPlan:
    """One step's work (`chunks`) and the scheduler's account of it, which the step record carries."""

    chunks: list[Chunk] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    blocked_reason: str | None = None  # why the head of the queue was not admitted
    decisions: list[dict[str, Any]] = field(default_factory=list)
    batch_id: int | None = None  # static batching: which batch this step belongs to
    cached_tokens: int = 0  # tokens this step's admissions took from the prefix cache instead of computing

    @property
    def num_tokens(self) -> int:
        return sum(c.num_tokens for c in self.chunks)

    @property
    def num_pad(self) -> int:
        return sum(c.num_pad for c in self.chunks)

    @property
    def phase(self) -> str:
        prefill = any(c.num_tokens > 1 or (c.num_tokens == 1 and not c.seq.num_output_tokens) for c in self.chunks)
        decode = any(c.num_tokens == 1 and c.seq.num_output_tokens for c in self.chunks)
        if prefill and decode:
            return "mixed"
        return "prefill" if prefill else "decode"

    def decide(self, stage: Stage, action: str, seq: Sequence, **detail: Any) -> None:
        """Note a decision about `seq` (admit, defer, preempt, readmit, finish) with its reason and resources."""
        self.decisions.append({"stage": stage, "action": action, "id": seq.request_id, **detail})
