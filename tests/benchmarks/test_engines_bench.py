"""Engine throughput benchmark (`make bench`): the raw loop, static and continuous batching side by side.

The default `batchmark bench engines` workload (256 requests, 64-token prompts, outputs uniform in
8..128, batch 32), one compute thread, after a warm-up. Targets, on the median of 3 trials (more with
BATCHMARK_BENCH_TRIALS): continuous >= 0.9x the raw loop (the hand-written batched loop with the same
layer code and no scheduler, every output forced to the mean length, so no tail) and continuous >= 1.5x
static on these mixed lengths. A trial is two passes over the three engines, forward and then backward
(raw, continuous, static, static, continuous, raw), its ratios the geometric mean of the two passes': a
drift of the shared machine's speed during the trial favours neither engine, where one pass per trial
let each trial's verdict follow which engine ran while the machine slowed.
"""

from __future__ import annotations

import math
import statistics

import pytest

from harness.bench_engines import RATIOS, OfflineWorkload, bench_engines
from tests.benchmarks.conftest import TRIALS

pytestmark = pytest.mark.bench


def test_engine_throughput(benchmark, embedded, one_thread):
    results: list[dict] = []

    def trials() -> None:  # bench_engines alternates the order pass by pass: passes 2i and 2i+1 are one trial
        results.append(bench_engines(embedded, OfflineWorkload(), batch=32, repeat=2 * TRIALS))

    benchmark.pedantic(trials, rounds=1, iterations=1)
    (result,) = results
    passes = result["trials"]
    per_trial = {key: [math.sqrt(passes[2 * i][key] * passes[2 * i + 1][key]) for i in range(TRIALS)] for key in RATIOS}
    medians = {key: statistics.median(values) for key, values in per_trial.items()}
    benchmark.extra_info.update(medians)
    benchmark.extra_info["tok_s_median_pass"] = {k: v for k, v in result.items() if k.endswith("_tok_s")}
    for key in RATIOS:
        per_pass, trial = [round(t[key], 3) for t in passes], [round(v, 3) for v in per_trial[key]]
        print(f"{key}: per pass {per_pass}, per trial {trial}, median {medians[key]:.3f}")
    assert medians["continuous_over_static"] >= 1.5
    assert medians["continuous_over_raw"] >= 0.9
