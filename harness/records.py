"""Per-request records: what the load generator writes, one JSON object per line, as requests finish.

Times are seconds on the run's monotonic clock (`time.perf_counter()` minus the run's start), so
records from one run compare directly. Every metric in `harness.metrics` is a pure function of a
table of these records (and, for utilisation, of the engine's step trace, `engines.step_record`).

This dataclass is the request record's one schema: the pandas frame (`harness.metrics.frame`) and the
pyarrow schema the fast readers use (`harness.metrics.arrow`) derive their columns and dtypes from it. Field
metadata, read by those readers: `required` marks a key without which a line is not a record; `absent`
is what a missing key reads as (otherwise the field's type says: 0, False, "", None, an empty list).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessInputError

RECORD_SCHEMA_VERSION = 1
REQUIRED = {"required": True}

if TYPE_CHECKING:
    from engines.api import FinishEvent, Request


class RecordError(HarnessInputError):
    """A records file, step trace or run directory that cannot be read; the message names the file and field."""


@dataclass
class RequestRecord:
    """What one request did, as the load generator saw it: written as soon as the request finishes."""

    request_id: str = field(metadata=REQUIRED)
    engine: str  # label of the engine run this record belongs to, e.g. "static" or "continuous"
    tenant: str = field(metadata={"absent": "default"})  # as `Request.tenant`: grouping drops missing keys
    priority: int
    max_tokens: int
    ignore_eos: bool
    prompt_tokens: int  # counted by the harness from the prompt it sent
    t_scheduled: float = field(metadata=REQUIRED)  # when the workload says the request arrives
    t_sent: float = field(metadata=REQUIRED)  # when the load generator actually handed it to the engine
    t_admitted: float | None = None  # when the engine first scheduled it (from the engine's events)
    t_first_token: float | None = None
    t_finish: float | None = None
    token_times: list[float] = field(default_factory=list)  # one entry per output token
    # The channel of each token time, one letter per token: "r" reasoning, "c" content (the answer). Empty when
    # every token is content: runs before reasoning was recorded, and engines whose output has no reasoning.
    token_channels: str = ""
    output_tokens: int = 0  # counted by the harness: number of token events received
    engine_prompt_tokens: int | None = None  # as reported by the engine in its finish event
    engine_output_tokens: int | None = None
    finish_reason: str | None = None  # "length" | "stop" | "abort" | "error"
    error_type: str | None = None  # e.g. "invalid_request", "connect", "http_status", "timeout"
    error_message: str | None = None
    preemptions: int | None = 0  # None: the engine could not see them (an HTTP target)
    trial: int = 0
    cached_tokens: int | None = None  # prompt tokens the engine took from its prefix cache (its own count)
    session: str | None = None  # multi-turn workloads: the conversation this request is a turn of
    turn: int | None = None  # 0 for a session's first request
    worker: int | None = None  # sharded load generation: the load-generator worker that sent it (else absent)
    user: int | None = None  # closed loop: the user (0..users-1) that sent it; None in an open loop
    replica: int | None = None  # a simulated cluster: the replica (0..n-1) its router sent it to; else absent
    # a real fleet: the name of the server that answered (`batchmark serve --replica-id`, its x-batchmark-replica
    # header, which vllm-router passes on); None: the server said none, or no response came
    replica_id: str | None = None
    # simulated P/D disaggregation: TTFT = (t_admitted - t_sent) prefill queue + (t_prefill_end - t_admitted)
    # prefill + (t_kv_arrived - t_prefill_end) transfer + (t_first_token - t_kv_arrived) first decode step
    t_prefill_end: float | None = None
    t_kv_arrived: float | None = None
    slo_class: str | None = None  # its SLO class (`--slo-class`; harness/loadgen/classes.py); None: unclassed
    # Speculative decoding, as the engine counted it for this request (`engines.api.SpecDecodeCounts`): verify
    # steps that checked drafts, tokens drafted, tokens accepted. None: no spec decode, or the engine did not say
    spec_drafts: int | None = None
    spec_draft_tokens: int | None = None
    spec_accepted_tokens: int | None = None
    # an HTTP target's own timing of this request (`batchmark serve`'s SERVER_TIMING_FIELD, engines/api.py):
    # seconds from the request reaching the server to its first token, and to its first compute (its queue
    # wait). None: the server did not say (any other server), or said something that was not seconds
    server_ttft_s: float | None = None
    server_queue_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))  # shallow: asdict would deep-copy every token time


def sent_record(
    request: Request, label: str, trial: int, t_scheduled: float, t_sent: float, user: int | None
) -> RequestRecord:
    """A request's record as the load generator hands it to the engine (real or virtual time): what the
    request says of itself, and when it was due and sent (seconds from t0)."""
    return RequestRecord(
        request_id=request.request_id,
        engine=label,
        tenant=request.tenant,
        priority=request.priority,
        max_tokens=request.max_tokens,
        ignore_eos=request.ignore_eos,
        prompt_tokens=len(request.prompt_token_ids),
        t_scheduled=t_scheduled,
        t_sent=t_sent,
        trial=trial,
        user=user,
        slo_class=request.slo_class,
    )


def set_finish(record: RequestRecord, event: FinishEvent, t_finish: float) -> None:
    """What every engine's FinishEvent says, onto the record (`t_finish`: its time on the records' clock).
    The fields only some engines fill (a real fleet's replica name, a simulated cluster's replica) the
    caller copies itself."""
    record.t_finish = t_finish
    record.finish_reason = event.reason
    record.engine_prompt_tokens = event.prompt_tokens
    record.engine_output_tokens = event.output_tokens
    record.preemptions = event.preemptions
    record.cached_tokens = event.cached_tokens
    set_spec_decode(record, event.spec_decode)
    record.error_type, record.error_message = event.error_type, event.error_message


def set_spec_decode(record: RequestRecord, counts: Any) -> None:
    """The record's spec-decode fields from a FinishEvent's `spec_decode` (None leaves them None)."""
    if counts is not None:
        record.spec_drafts, record.spec_draft_tokens = counts.drafts, counts.draft_tokens
        record.spec_accepted_tokens = counts.accepted_tokens


def token_channels(count: int, reasoning_at: list[int] | range) -> str:
    """`RequestRecord.token_channels` for `count` tokens of which those at positions `reasoning_at` are
    reasoning: "" when none are (every token content), else one letter per token."""
    if not reasoning_at:
        return ""
    letters = ["c"] * count
    for index in reasoning_at:
        letters[index] = "r"
    return "".join(letters)
