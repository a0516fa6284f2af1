"""What runs inside one load-generator worker: batchmark's own asyncio load generator on one shard.

The worker builds its own engine from the spec (an HTTP client, or the zero engine), converts the agreed
start instant from its wall clock to its monotonic clock, and replays its shard in a thread of its own,
so the driver can keep collecting records while the run goes on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

from harness.engine_specs import EngineSpec, build_engine
from harness.loadgen import StopRules, dispatcher_first, replay_engine
from harness.shards.split import Shard


@dataclass(frozen=True)
class ShardOrder:
    """One engine run's shard for one worker, and the instant (on the worker's wall clock) it starts at."""

    spec: EngineSpec
    shard: Shard
    label: str
    trial: int
    start_at: float  # time.time() on the worker, corrected by the measured offset from the driver's clock
    stop_rules: StopRules | None = None


class ShardWorker:
    """A long-lived load generator: `start(order)` replays a shard in the background, `drain()` hands over the
    records finished since the last call and, at the end, the outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []
        self._outcome: dict[str, Any] | None = None
        self._error: str | None = None
        self._thread: threading.Thread | None = None

    def clock(self) -> float:
        return time.time()

    def start(self, order: ShardOrder) -> float:
        """Begin replaying; returns how long before the agreed start the order arrived (s)."""
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("a shard is already running on this worker")
        self._records, self._outcome, self._error = [], None, None
        self._thread = threading.Thread(target=self._run, args=(order,), daemon=True, name="batchmark-shard")
        self._thread.start()
        return order.start_at - time.time()

    def drain(self) -> dict[str, Any]:
        with self._lock:
            records, self._records = self._records, []
        return {"records": records, "outcome": self._outcome, "error": self._error}

    def _run(self, order: ShardOrder) -> None:
        try:
            with dispatcher_first():
                outcome = asyncio.run(self._replay(order))
            with self._lock:  # the last records are in before the outcome says the shard is done
                self._outcome = {
                    "records": outcome.records,
                    "errors": outcome.errors,
                    "wall_time_s": outcome.wall_time_s,
                    "stopped_early": outcome.stopped_early,
                    "not_sent": outcome.not_sent,
                }
        except Exception as exc:  # the driver reports it; a dead thread must not look like a slow one
            self._error = f"{type(exc).__name__}: {exc}".splitlines()[0]

    async def _replay(self, order: ShardOrder) -> Any:
        worker = order.shard.worker

        def sink(record: Any) -> None:
            row = record.to_json()
            row["worker"] = worker
            with self._lock:
                self._records.append(row)

        engine = build_engine(order.spec, None)
        t0 = time.perf_counter() + (order.start_at - time.time())
        return await replay_engine(
            engine,
            order.shard.schedule,
            order.shard.scenario,
            sink,
            label=order.label,
            trial=order.trial,
            stop_rules=order.stop_rules,
            t0=t0,
        )
