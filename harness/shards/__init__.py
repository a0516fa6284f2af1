"""Sharded load generation (`--workers N`, docs/cluster.md): one schedule offered by N long-lived
load-generator workers at once, for the engines a separate process can drive (`http`, `zero`).

`split.py` splits a schedule (by closed-loop user, tenant, or position), `clock.py` measures the workers'
clock offsets by ping-pong, `worker.py` is what runs inside a worker (batchmark's own asyncio load
generator on its shard), `drive.py` the driver's side. Imports: `harness.loadgen`, `harness.engine_specs`,
`harness.executor` (the workers) and `harness.metrics.validity` (the lag bound).
"""

from harness.shards.clock import ClockOffset, measure_offset
from harness.shards.drive import SHARDABLE, ShardedLoad, ShardedOutcome
from harness.shards.split import Shard, split_schedule
from harness.shards.worker import ShardOrder, ShardWorker

__all__ = [
    "SHARDABLE",
    "ClockOffset",
    "Shard",
    "ShardOrder",
    "ShardWorker",
    "ShardedLoad",
    "ShardedOutcome",
    "measure_offset",
    "split_schedule",
]
