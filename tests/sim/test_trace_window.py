"""A window of a step trace (`trace_steps(..., before_s)`): the steps that start before a time of their run, as a
fit run's first requests are priced against a probe of them (docs/plans/fit_window_speed.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from harness.cli import main
from harness.simulation import trace_steps


def test_a_window_keeps_the_steps_that_start_before_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--workload", "chat-small", "--first", "12", "--engine", "sim", "--no-report", "--no-progress"]
    assert main([*args, "--out", str(out)]) == 0
    path = next((out / "steps").glob("*.jsonl"))
    starts = [json.loads(line)["t_start"] for line in path.read_text().splitlines()]
    whole = trace_steps([path])
    cut = sorted(starts)[len(starts) // 2]
    window = trace_steps([path], before_s=cut)
    kept = sum(t < cut for t in starts)
    assert 0 < kept < len(starts) and len(window.duration_s) == kept
    assert np.array_equal(window.features, whole.features[:kept])
    assert np.array_equal(window.duration_s, whole.duration_s[:kept])
    assert len(trace_steps([path], before_s=0.0).duration_s) == 0
