"""Benchmark fixtures."""

from __future__ import annotations

import os

import pytest

# Trials per comparison (the shape asks for 3): more make a median survive a busier machine.
TRIALS = int(os.environ.get("BATCHMARK_BENCH_TRIALS", "3"))
# Pairs of neighbouring runs per trial, where a trial is short enough to repeat (a P2 run takes ~2 s).
ROUNDS = int(os.environ.get("BATCHMARK_BENCH_ROUNDS", "4"))


@pytest.fixture
def one_thread():
    """One compute thread for the test's engines (the `--threads 1` of the issue's shapes): on a shared
    2-core machine two OpenMP threads per engine wait on each other and on the neighbours' work."""
    from engines import compute_threads

    before = compute_threads.count()
    compute_threads.configure(1)
    yield
    compute_threads.configure(before)
