"""Report build time (`make bench`): a 100,000-request run's report builds in <= 10 s and stays <= 15 MB.

The run directory is simulated (tests.fixtures.run_dirs: the real schedulers in virtual time) and so
exactly a real one's: static and continuous engines on one 100k-request schedule, records with every
token time, step traces with their id lists, metrics.json. Times the in-process `write_report` call
(imports excluded) and reports the median of 3 builds.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from reports import write_report
from tests.fixtures.run_dirs import capacity_rps, write_synthetic_run

pytestmark = pytest.mark.bench

REQUESTS = 100_000
TARGET_S = 10.0
MAX_BYTES = 15 * 1024 * 1024


@pytest.fixture(scope="module")
def run_100k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    started = time.perf_counter()
    run = write_synthetic_run(
        tmp_path_factory.mktemp("bench") / "run",
        requests=REQUESTS,
        slots=32,
        mean_output=32,
        rate=0.7 * capacity_rps(32, 32),
        n_boot=1000,
    )
    sizes = {p.relative_to(run).as_posix(): p.stat().st_size / 1e6 for p in run.rglob("*") if p.is_file()}
    listing = ", ".join(f"{k} {v:.0f} MB" for k, v in sizes.items())
    print(f"\nsynthetic run: {time.perf_counter() - started:.1f} s; {listing}")
    return run


def test_report_speed_100k(benchmark, run_100k: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    times: list[float] = []

    def build() -> None:
        started = time.perf_counter()
        write_report([run_100k], out)
        times.append(time.perf_counter() - started)

    benchmark.pedantic(build, rounds=3, iterations=1)
    median = statistics.median(times)
    size = out.stat().st_size
    benchmark.extra_info.update(median_s=median, bytes=size)
    print(
        f"report of {REQUESTS:,} requests x 2 engines: {', '.join(f'{t:.2f}' for t in times)} s "
        f"(median {median:.2f} s), {size / 1e6:.2f} MB"
    )
    assert size <= MAX_BYTES
    assert median <= TARGET_S
