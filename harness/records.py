"""Per-request records: what the load generator writes, one JSON object per line, as requests finish.

Times are seconds on the run's monotonic clock (`time.perf_counter()` minus the run's start), so
records from one run compare directly. Every metric in `harness.metrics` is a pure function of a
table of these records (and, for utilisation, of the engine's step trace).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

RECORD_SCHEMA_VERSION = 1


@dataclass
class RequestRecord:
    request_id: str
    engine: str  # label of the engine run this record belongs to, e.g. "static" or "continuous"
    tenant: str
    priority: int
    max_tokens: int
    ignore_eos: bool
    prompt_tokens: int  # counted by the harness from the prompt it sent
    t_scheduled: float  # when the workload says the request arrives
    t_sent: float  # when the load generator actually handed it to the engine
    t_admitted: float | None = None  # when the engine first scheduled it (from the engine's events)
    t_first_token: float | None = None
    t_finish: float | None = None
    token_times: list[float] = field(default_factory=list)  # one entry per output token
    output_tokens: int = 0  # counted by the harness: number of token events received
    engine_prompt_tokens: int | None = None  # as reported by the engine in its finish event
    engine_output_tokens: int | None = None
    finish_reason: str | None = None  # "length" | "stop" | "abort" | "error"
    error_type: str | None = None  # e.g. "invalid_request", "connect", "http_status", "timeout"
    error_message: str | None = None
    preemptions: int = 0
    trial: int = 0
    user: int | None = None  # closed loop: the user (0..users-1) that sent it; None in an open loop

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
