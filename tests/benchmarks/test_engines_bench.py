"""Engine throughput benchmark (`make bench`): the issue's targets, measured side by side in one process.

Targets: continuous / static >= 1.5 and continuous / raw >= 0.8 on the default workload (256 requests,
64-token prompts, outputs uniform in 8..128, batch 32), median of 3 runs.
"""

from __future__ import annotations

import statistics

import pytest

from harness.bench_engines import OfflineWorkload, bench_once

pytestmark = pytest.mark.bench


def test_engine_throughput(benchmark, embedded):
    trials: list[dict[str, float]] = []

    def one_trial() -> None:
        trials.append(bench_once(embedded, OfflineWorkload(), batch=32))

    benchmark.pedantic(one_trial, rounds=3, iterations=1)
    medians = {key: statistics.median(t[key] for t in trials) for key in trials[0]}
    benchmark.extra_info.update(medians)
    print({k: round(v, 3) for k, v in medians.items()})
    assert medians["continuous_over_static"] >= 1.5
    assert medians["continuous_over_raw"] >= 0.8
