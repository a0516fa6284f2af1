"""Engine throughput benchmark (`make bench`): the raw loop, static and continuous batching side by side.

The default `batchmark bench engines` workload (256 requests, 64-token prompts, outputs uniform in
8..128, batch 32), one compute thread, median of 3 trials (more with BATCHMARK_BENCH_TRIALS) after a
warm-up, the engines' order alternating between trials. Targets: continuous >= 0.9x the raw loop (the
hand-written batched loop with the same layer code and no scheduler, every output forced to the mean
length, so no tail) and continuous >= 1.5x static on these mixed lengths.
"""

from __future__ import annotations

import pytest

from harness.bench_engines import OfflineWorkload, bench_engines
from tests.benchmarks.conftest import TRIALS

pytestmark = pytest.mark.bench


def test_engine_throughput(benchmark, embedded, one_thread):
    results: list[dict] = []

    def three_trials() -> None:
        results.append(bench_engines(embedded, OfflineWorkload(), batch=32, repeat=TRIALS))

    benchmark.pedantic(three_trials, rounds=1, iterations=1)
    (result,) = results
    medians = {k: v for k, v in result.items() if isinstance(v, float)}
    benchmark.extra_info.update(medians)
    print({k: round(v, 3) for k, v in medians.items()})
    for key in ("continuous_over_raw", "continuous_over_static"):
        print(f"{key} per trial: {[round(t[key], 3) for t in result['trials']]}")
    assert medians["continuous_over_static"] >= 1.5
    assert medians["continuous_over_raw"] >= 0.9
