"""Clock offsets between the driver and its workers, by ping-pong round trips (NTP's estimate).

The driver reads its clock, asks the worker for its clock, reads its own again: the worker's reading lies
within that round trip, so offset = worker - midpoint, uncertain by half the round trip. The round trip
with the least time is the tightest bound; `ROUNDS` of them are taken.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

ROUNDS = 16


@dataclass(frozen=True)
class ClockOffset:
    """A worker's clock minus the driver's (s), and how far off that estimate can be (half a round trip)."""

    worker: int
    offset_s: float
    uncertainty_s: float
    rounds: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def measure_offset(worker: int, handle: Any, rounds: int = ROUNDS) -> ClockOffset:
    """Ping-pong `handle.submit("clock")` `rounds` times; keep the tightest round trip."""
    best: tuple[float, float] | None = None
    for _ in range(rounds):
        sent = time.time()
        theirs = handle.submit("clock").get()
        back = time.time()
        half = (back - sent) / 2
        if best is None or half < best[1]:
            best = (theirs - (sent + half), half)
    assert best is not None
    return ClockOffset(worker, best[0], best[1], rounds)
