"""The driver's side of sharded load generation: split, measure clocks, start every shard at one instant,
collect records as they finish, merge the outcomes.

Records reach the sink as the workers finish them (polled every `POLL_S`), each with its worker's index,
so an interrupted run keeps what was collected. Every worker's record times are seconds from the agreed
start, which each worker placed on its own clock with the measured offset; when an offset is less certain
than the schedule-lag bound, the run is flagged: cross-worker times may then be off by more than the lag
the run is judged by.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.engine_specs import EngineSpec
from harness.executor.workers import WorkerFailed, start_workers
from harness.loadgen import LoopOutcome, Scenario, Scheduled, StopRules
from harness.metrics.validity import DEFAULT_LAG_THRESHOLD_S
from harness.shards.clock import ClockOffset, measure_offset
from harness.shards.split import split_schedule
from harness.shards.worker import ShardOrder, ShardWorker

SHARDABLE = ("http", "zero")  # engines a separate process can drive: over the network, or none at all
LEAD_S = 1.0  # the agreed start lies this far after the orders go out: every worker has its order by then
POLL_S = 0.2


@dataclass
class ShardedOutcome:
    """A sharded engine run: the merged outcome, the split, each worker's clock and order lead."""

    outcome: LoopOutcome
    split: str
    clocks: list[ClockOffset]
    leads_s: list[float]  # how long before the agreed start each worker had its order
    flag: str | None = None
    workers: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "split_by": self.split,
            "clock_offsets": [c.to_json() for c in self.clocks],
            "order_lead_s": self.leads_s,
            "lag_bound_s": DEFAULT_LAG_THRESHOLD_S,
            "clock_flag": self.flag,
        }


def clock_flag(clocks: list[ClockOffset], leads_s: list[float]) -> str | None:
    """Why cross-worker times cannot be trusted to the schedule-lag bound, or None when they can."""
    worst = max((c.uncertainty_s for c in clocks), default=0.0)
    flag = None
    if worst > DEFAULT_LAG_THRESHOLD_S:
        flag = (
            f"clock offsets between workers are uncertain by up to {worst * 1e3:.1f} ms, more than the "
            f"{DEFAULT_LAG_THRESHOLD_S * 1e3:g} ms schedule-lag bound: times across workers may disagree "
            "by that much"
        )
    late = [i for i, lead in enumerate(leads_s) if lead < 0]
    if late:
        flag = (flag + "; " if flag else "") + f"worker(s) {late} got their order after the agreed start"
    return flag


class ShardedLoad:
    """N long-lived load-generator workers (processes, or Ray actors), started on first use and reused by
    every engine run of a benchmark run; `close()` ends them."""

    def __init__(self, kind: str, workers: int) -> None:
        self.kind, self.n = kind, workers
        self._workers: list[Any] = []

    def replay(
        self,
        spec: EngineSpec,
        schedule: list[Scheduled],
        scenario: Scenario,
        sink: Callable[[dict[str, Any]], None],
        *,
        label: str,
        trial: int,
        stop_rules: StopRules | None = None,
    ) -> ShardedOutcome:
        shards, split = split_schedule(schedule, self.n, scenario)
        if not self._workers:
            self._workers = start_workers(self.kind, self.n, ShardWorker)
        workers = self._workers[: len(shards)]
        clocks = [measure_offset(i, w) for i, w in enumerate(workers)]
        start = time.time() + LEAD_S
        orders = [
            w.submit("start", ShardOrder(spec, shard, label, trial, start + clocks[i].offset_s, stop_rules))
            for i, (w, shard) in enumerate(zip(workers, shards, strict=True))
        ]
        leads = [o.get() for o in orders]
        outcomes: list[dict[str, Any] | None] = [None] * len(workers)
        while any(o is None for o in outcomes):
            time.sleep(POLL_S)
            polls = [(i, w.submit("drain")) for i, w in enumerate(workers) if outcomes[i] is None]
            for i, poll in polls:
                got = poll.get()
                for row in got["records"]:
                    sink(row)
                if got["error"]:
                    raise WorkerFailed(f"load-generator worker w{i}: {got['error']}")
                outcomes[i] = got["outcome"]
        done = [o for o in outcomes if o is not None]
        stopped = next(({**o["stopped_early"], "worker": i} for i, o in enumerate(done) if o["stopped_early"]), None)
        merged = LoopOutcome(
            records=sum(o["records"] for o in done),
            errors=sum(o["errors"] for o in done),
            wall_time_s=max(o["wall_time_s"] for o in done),
            stopped_early=stopped,
            not_sent=sum(o["not_sent"] for o in done),
        )
        flag = clock_flag(clocks, leads)
        return ShardedOutcome(merged, split, clocks, leads, flag, len(workers))

    def close(self) -> None:
        for worker in self._workers:
            worker.close()
        self._workers = []
