"""What a run cost and what it bought: $ per 1M output tokens and $ per 1,000 useful requests.

Cost = price per accelerator-hour x accelerators x wall time of the engine run. The default
$2.00/h is a round stand-in for one rented datacenter GPU; on the CPU test machine it is not a
real price, only a way to turn wall time into a comparable unit. "Useful" requests met every SLO,
so an engine that is fast but misses its SLOs pays for that here.
"""

from __future__ import annotations

from typing import Any

DEFAULT_PRICE_PER_HOUR = 2.00


def cost(
    wall_time_s: float | None,
    *,
    output_tokens: int,
    good_requests: int,
    price_per_hour: float = DEFAULT_PRICE_PER_HOUR,
    accelerators: int = 1,
) -> dict[str, Any]:
    """Total $, $ per 1M output tokens and $ per 1,000 SLO-meeting requests (None when undefined)."""
    known = wall_time_s is not None and wall_time_s >= 0
    total = price_per_hour * accelerators * wall_time_s / 3600.0 if known else None
    per_1m = total / output_tokens * 1e6 if total is not None and output_tokens else None
    per_1k_good = total / good_requests * 1e3 if total is not None and good_requests else None
    return {
        "price_per_hour": price_per_hour,
        "accelerators": accelerators,
        "wall_time_s": wall_time_s,
        "total_usd": total,
        "usd_per_1m_output_tokens": per_1m,
        "usd_per_1k_good_requests": per_1k_good,
    }
