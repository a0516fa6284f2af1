"""What a workload is: an ordered list of requests plus the spec that produced it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workloads.slo_targets import ClassTargets


@dataclass(frozen=True, slots=True)
class WorkloadRequest:
    """One request of a workload: when it arrives, its lengths, tenant and priority."""

    request_id: str  # stable for a given spec and seed: "r" + zero-padded position in arrival order
    arrival_s: float  # seconds from workload start, ascending; 0.0 for every request of a closed loop
    input_tokens: int
    output_tokens: int  # the length to force (max_tokens with ignore_eos)
    tenant: str = "default"
    priority: int = 0
    prompt_text: str | None = None
    prefix_hash_ids: tuple[int, ...] = ()  # Mooncake prefix blocks (512 tokens each), if any
    reasoning_tokens: int = 0  # the first this many of its output tokens are reasoning (`Request.reasoning_tokens`)
    # Its SLO class, when the trace or spec names one (`--slo-class` gives each class its targets); None: the
    # harness classes it by its tenant (harness/loadgen/classes.py)
    slo_class: str | None = None
    # Multi-turn (workloads/sessions.py): the conversation, this request's turn (0 opens it), and the think
    # time after the previous turn's answer. A later turn's prompt is the previous turn's prompt, its answer
    # and `input_tokens` minus both of new user text; `arrival_s` of a later turn is only a lower bound.
    session: str | None = None
    turn: int = 0
    think_s: float = 0.0
    # Agentic sessions: the tool's run time before this turn (after the think time), and the branch: a turn
    # of fan-out k is k requests sent together (branch 0 the main line, 1..k-1 sub-agents), all of which
    # finish before the next turn is sent (the join).
    tool_s: float = 0.0
    branch: int = 0
    # A later turn whose client cut its context (compaction): its prompt starts over, opening with the
    # session's shared blocks like a sub-agent's, and is no extension of the history
    fresh: bool = False


@dataclass
class Workload:
    """An ordered list of requests, the spec that produced them, and notes on what was changed."""

    name: str
    requests: list[WorkloadRequest]
    spec: dict[str, Any]  # canonical and json-serialisable: source, seed, transforms applied in order
    notes: list[str] = field(default_factory=list)  # what was dropped, clipped or resampled, in words
    # Closed loop: `closed_loop_users` users each send the next request in list order, wait for its
    # response, then think for `think_time_s`; arrival times carry no meaning then.
    closed_loop_users: int | None = None
    think_time_s: float = 0.0
    # Each SLO class a request names, and where it was first named ("FILE:LINE: FIELD"), so that a class the
    # run does not define is reported at its source (harness/loadgen/classes.py)
    class_sources: dict[str, str] = field(default_factory=dict)
    # The spec's SLO classes and their targets (`[[slo_classes]]`; a CLI `--slo-class` of the same name wins)
    slo_classes: tuple[ClassTargets, ...] = ()

    def fingerprint(self) -> str:
        from workloads.fingerprint import fingerprint

        return fingerprint(self)

    def describe(self) -> dict[str, Any]:
        from workloads.stats import describe

        return describe(self)
