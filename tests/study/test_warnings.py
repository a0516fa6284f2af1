"""Early warnings: they fire under overload and not on a calm run, the lead time is onset - firing, and the
monitor that runs on the streamed step trace fires when the table computed afterwards says it did."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from harness.metrics import SLO, load_records, load_steps
from harness.metrics.warnings import (
    MIN_EVENTS,
    STEP_SIGNALS,
    WarningMonitor,
    WarningSettings,
    early_warnings,
    first_firing,
    longest_wait,
    warning_timeline,
    window_p99,
)

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

SLO_2S = SLO(ttft_s=2.0, tpot_s=0.2)


def test_overload_warns_and_the_lead_time_is_onset_minus_firing(overload_run: Path) -> None:
    metrics = json.loads((overload_run / "metrics.json").read_text())
    w = next(r["summary"]["warnings"] for r in metrics["runs"] if r["engine"] == "fcfs")
    onset = w["slo_violation_onset_s"]
    assert onset is not None
    fired = {k: v for k, v in w["signals"].items() if v["first_fire_s"] is not None}
    assert {"queue_growth", "longest_wait"} <= set(fired)
    for signal in fired.values():
        assert signal["lead_s"] == pytest.approx(onset - signal["first_fire_s"])
    assert fired["longest_wait"]["first_fire_s"] <= onset  # waiting past half the SLO precedes missing it
    assert w["earliest"] in fired and w["signals"]["kv_utilisation"]["first_fire_s"] is None  # KV is plentiful


def test_a_calm_run_raises_nothing(tmp_path: Path) -> None:
    out = tmp_path / "calm"
    argv = [
        "run",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
        "--workload",
        "noisy-neighbour",
        "--rate",
        "2",
        "--duration",
        "20",
        "--engine",
        "sim",
    ]
    assert main(argv) == 0
    w = json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]["warnings"]
    assert w["slo_violation_onset_s"] is None and w["earliest"] is None
    assert all(s["first_fire_s"] is None for s in w["signals"].values())


def test_the_streaming_monitor_agrees_with_the_table(overload_run: Path) -> None:
    steps = load_steps(overload_run / "steps" / "fcfs-t0.jsonl")
    records = load_records(overload_run / "records.jsonl")
    records = records[records["engine"] == "fcfs"]
    settings = WarningSettings()
    live = WarningMonitor(settings)
    for row in steps.to_dict(orient="records"):
        live.observe(row)
    table = first_firing(warning_timeline(records, steps, SLO_2S, settings), settings.thresholds)
    assert live.fired  # something fired while the trace streamed
    for name in STEP_SIGNALS:
        assert live.fired.get(name) == table[name]


def test_longest_wait_counts_only_requests_not_yet_admitted() -> None:
    records = pd.DataFrame(
        {
            "t_scheduled": [0.0, 1.0],
            "t_admitted": [5.0, 1.5],
            "t_finish": [6.0, 2.0],
            "token_times": [[5.5], [1.8]],
            "t_first_token": [5.5, 1.8],
            "t_sent": [0.0, 1.0],
        }
    )
    waits = longest_wait(records, np.array([1.2, 4.0, 5.0, 7.0]))
    assert waits.tolist() == pytest.approx([1.2, 4.0, 0.0, 0.0])


def test_thresholds_are_overridable_and_checked() -> None:
    settings = WarningSettings().with_thresholds({"kv_utilisation": 0.5})
    assert settings.thresholds["kv_utilisation"] == 0.5 and settings.thresholds["queue_growth"] == 0.2
    with pytest.raises(ValueError, match="unknown warning 'kv'"):
        WarningSettings().with_thresholds({"kv": 0.5})


def test_no_records_means_no_data_not_zero() -> None:
    empty = load_records_empty()
    w = early_warnings(empty, None, SLO_2S)
    assert w["slo_violation_onset_s"] is None and w["signals"] == {}


def load_records_empty() -> pd.DataFrame:
    from harness.metrics import records_frame

    return records_frame([])


def test_the_run_report_shows_the_warnings(overload_run: Path) -> None:
    from reports import build_report

    html = build_report([overload_run])
    assert "Early warnings: first firing and lead before SLO violations began" in html
    assert "queue_growth" in html and "SLO violations begin" in html


def test_window_p99_is_each_windows_own_percentile_bit_for_bit():
    """window_p99 takes the windows of one length in one call: the values np.percentile gives each window's slice
    alone, to the last bit (ties and rounded values among them), and NaN for a window under MIN_EVENTS."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(1, 2000))
        values = rng.lognormal(size=n) * rng.choice([1e-3, 1.0, 1e3])
        if trial % 3 == 0:
            values = np.round(values, 2)
        when = np.sort(rng.uniform(0.0, 100.0, n))
        t = np.linspace(0.0, 100.0, int(rng.integers(1, 400)))
        window = float(rng.uniform(0.5, 20.0))
        hi = np.searchsorted(when, t, side="right")
        lo = np.searchsorted(when, t - window, side="right")
        expected = np.full(t.size, np.nan)
        for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
            if b - a >= MIN_EVENTS:
                expected[i] = np.percentile(values[a:b], 99)
        assert window_p99(values, lo, hi).tobytes() == expected.tobytes()
