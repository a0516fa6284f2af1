"""Seeded synthetic runs for gate tests and examples, built from `harness.metrics.synthetic.make_record`.

`schedule_seed` fixes the requests (arrival times, sizes), `seed` the per-request service noise, so two
runs with one schedule_seed replayed the identical schedule and differ only by noise (and `speed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.metrics.synthetic import make_record


def synthetic_run(seed: int, *, n: int = 120, speed: float = 1.0, schedule_seed: int = 0, rate: float = 4.0,
                  engine: str = "e", failed: int = 0, servers: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """`speed` multiplies every latency (1.3 = 30% slower). With `servers`, requests queue FIFO for that
    many slots, so a slower engine also finishes less work per second once the arrival rate exceeds it."""
    sched = np.random.default_rng(schedule_seed)
    arrivals = np.cumsum(sched.exponential(1.0 / rate, n))
    size = sched.lognormal(0.0, 0.4, n)
    out_tokens = sched.integers(4, 40, n)
    noise = np.random.default_rng(seed)
    free = np.zeros(servers or 1)
    records = []
    for i in range(n):
        ttft = 0.05 * size[i] * noise.lognormal(0.0, 0.2) * speed
        gaps = list(0.02 * speed * noise.lognormal(0.0, 0.15, int(out_tokens[i]) - 1))
        start = arrivals[i]
        if servers is not None:
            slot = int(np.argmin(free))
            start = max(start, free[slot])
            free[slot] = start + ttft + sum(gaps)
        rec = make_record(f"r{i:04d}", t_scheduled=float(arrivals[i]), t_admitted=float(start),
                          ttft=float(start - arrivals[i] + ttft), gaps=gaps, engine=engine)  # fmt: skip
        if i < failed:
            rec.update(finish_reason="error", error_type="engine_exception", error_message="synthetic")
        records.append(rec)
    return records
