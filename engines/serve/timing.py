"""The server's own timing of one request, for the extension field every completion ends with
(`engines.api.SERVER_TIMING_FIELD`): the request reaching the handler -> its first token (the TTFT /metrics'
histogram observes, engines/serve/submit.py) and -> its first compute (its queue wait, when the engine emits an
`AdmitEvent`). With it a client splits each request's TTFT into the server's part and the path's, per request."""

from __future__ import annotations

from typing import Any


class RequestTiming:
    """One request's times on `time.perf_counter()`, the clock of the engine's events: the handler sets
    `t_admitted` and `t_first_token` from its first `AdmitEvent` and `TokenEvent` (inline: this is the per-token
    path)."""

    __slots__ = ("t_admitted", "t_arrival", "t_first_token")

    def __init__(self, t_arrival: float) -> None:
        self.t_arrival = t_arrival
        self.t_admitted: float | None = None
        self.t_first_token: float | None = None

    def field(self) -> dict[str, Any] | None:
        """The field's value: seconds, never negative; None before a first token (nothing to say)."""
        if self.t_first_token is None:
            return None
        value = {"ttft_s": max(0.0, self.t_first_token - self.t_arrival)}
        if self.t_admitted is not None:
            value["queue_s"] = max(0.0, self.t_admitted - self.t_arrival)
        return value
