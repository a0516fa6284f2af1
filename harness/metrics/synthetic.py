"""Hand-checkable request records for tests and examples (no randomness unless asked)."""

from __future__ import annotations

from typing import Any, Literal


def make_record(
    request_id: str,
    *,
    t_scheduled: float = 0.0,
    t_sent: float | None = None,
    t_admitted: float | Literal["sent"] | None = "sent",
    ttft: float = 0.1,
    gaps: list[float] | None = None,
    finish_after_last: float = 0.0,
    engine: str = "e",
    tenant: str = "t0",
    prompt_tokens: int = 10,
    max_tokens: int | None = None,
    ignore_eos: bool = False,
    **overrides: Any,
) -> dict[str, Any]:
    """A successful record: first token `ttft` after the scheduled arrival, then one token per gap.

    `t_sent` defaults to the scheduled time, `t_admitted` to the send (None: never admitted); the finish is the last
    token plus `finish_after_last`. Any `RequestRecord` field can be overridden by keyword.
    """
    gaps = [] if gaps is None else gaps
    sent = t_scheduled if t_sent is None else t_sent
    first = t_scheduled + ttft
    times = [first]
    for g in gaps:
        times.append(times[-1] + g)
    record: dict[str, Any] = {
        "request_id": request_id,
        "engine": engine,
        "tenant": tenant,
        "priority": 0,
        "max_tokens": len(times) if max_tokens is None else max_tokens,
        "ignore_eos": ignore_eos,
        "prompt_tokens": prompt_tokens,
        "t_scheduled": t_scheduled,
        "t_sent": sent,
        "t_admitted": sent if t_admitted == "sent" else t_admitted,
        "t_first_token": first,
        "t_finish": times[-1] + finish_after_last,
        "token_times": times,
        "output_tokens": len(times),
        "engine_prompt_tokens": prompt_tokens,
        "engine_output_tokens": len(times),
        "finish_reason": "length",
        "error_type": None,
        "error_message": None,
        "preemptions": 0,
        "trial": 0,
    }
    record.update(overrides)
    # Keep the counts consistent with overridden token lists unless they were overridden themselves.
    if "output_tokens" not in overrides:
        record["output_tokens"] = len(record["token_times"])
    if "engine_output_tokens" not in overrides:
        record["engine_output_tokens"] = record["output_tokens"]
    if max_tokens is None:
        record["max_tokens"] = record["output_tokens"]
    return record
