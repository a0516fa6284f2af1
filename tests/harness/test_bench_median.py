"""`bench engines` with repeats reports one trial's numbers, so tok/s and ratios never contradict each other."""

from __future__ import annotations

import itertools

import pytest

from harness import bench_engines as bench


def _trial(raw: float, static: float, continuous: float) -> dict[str, float]:
    return {
        "raw_tok_s": raw,
        "static_tok_s": static,
        "continuous_tok_s": continuous,
        "continuous_over_static": continuous / static,
        "continuous_over_raw": continuous / raw,
        "static_over_raw": static / raw,
        "static_occupancy": 0.5,
        "continuous_occupancy": 0.9,
        "static_slot_waste": 0.4,
        "continuous_slot_waste": 0.1,
        "static_steps": 10.0,
        "continuous_steps": 8.0,
        "raw_steps": 8.0,
    }


def test_repeats_report_the_median_trial_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # a noisy machine: each trial is self-consistent, but column-wise medians mix them (static above raw)
    trials = [_trial(202, 250, 260), _trial(300, 243, 400), _trial(180, 100, 200)]
    feed = itertools.chain([trials[0]], trials)  # the first call is the warm-up
    monkeypatch.setattr(bench, "bench_once", lambda *a, **k: next(feed))
    monkeypatch.setattr(bench.compute_threads, "count", lambda: 2)
    result = bench.bench_engines(None, bench.OfflineWorkload(), batch=8, repeat=3)  # type: ignore[arg-type]
    for ratio, top, bottom in (
        ("static_over_raw", "static_tok_s", "raw_tok_s"),
        ("continuous_over_raw", "continuous_tok_s", "raw_tok_s"),
        ("continuous_over_static", "continuous_tok_s", "static_tok_s"),
    ):
        assert result[ratio] == pytest.approx(result[top] / result[bottom]), ratio
    # continuous / static per trial: 1.04, 1.65, 2.0 -> the median trial is the second
    assert result["raw_tok_s"] == 300 and result["median_trial"] == 1
    assert result["continuous_over_static_range"] == pytest.approx([260 / 250, 2.0])
    table = bench.format_table(result)
    assert "trial 1, the median of 3" in table and "1.04-2.00x" in table
