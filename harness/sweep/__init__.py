"""Rate sweeps and capacity search (`batchmark sweep`, docs/gate.md): the throughput-latency curve of
one or more engines and the highest offered rate at which each still meets its SLOs.

The decisions are pure functions over a `measure(rate, engines, phase)` callback (`search.py`); the
runner gets a `run_one` callback from the CLI, so it never builds an engine itself. Imports:
`harness.metrics` and the harness's errors only."""

from __future__ import annotations

from harness.sweep.point import Point, measure_point
from harness.sweep.runner import SweepPlan, capacity_lines, run_sweep
from harness.sweep.search import Capacity, bisect, capacity, climb, spread
from harness.sweep.table import format_table

__all__ = [
    "Capacity",
    "Point",
    "SweepPlan",
    "bisect",
    "capacity",
    "capacity_lines",
    "climb",
    "format_table",
    "measure_point",
    "run_sweep",
    "spread",
]
