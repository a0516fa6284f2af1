"""Engine throughput benchmark (`make bench`): the issue's targets, measured side by side in one process.

Targets: continuous / static >= 1.5 and continuous / raw >= 0.8 on the default workload (256 requests,
64-token prompts, outputs uniform in 8..128, batch 32), median of 3 runs after a warm-up.
"""

from __future__ import annotations

import pytest

from harness.bench_engines import OfflineWorkload, bench_engines

pytestmark = pytest.mark.bench


def test_engine_throughput(benchmark, embedded):
    results: list[dict] = []

    def three_trials() -> None:  # after a warm-up; the engines' order alternates between trials
        results.append(bench_engines(embedded, OfflineWorkload(), batch=32, repeat=3))

    benchmark.pedantic(three_trials, rounds=1, iterations=1)
    (result,) = results
    medians = {k: v for k, v in result.items() if isinstance(v, float)}
    benchmark.extra_info.update(medians)
    print({k: round(v, 3) for k, v in medians.items()})
    assert medians["continuous_over_static"] >= 1.5
    assert medians["continuous_over_raw"] >= 0.8
