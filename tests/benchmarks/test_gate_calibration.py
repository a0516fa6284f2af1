"""Gate calibration on the embedded model (`make bench`, about an hour on 2 cores).

Targets (issue 7): over 20 A/A pairs the gate fails at most 5% of them, and a 10% per-step slowdown is
caught in at least 95% of 20 pairs, with the rule `tpot.p50 <= +5%` at alpha 0.01.

Protocol: each pair replays one seeded 16-request burst of chat-small on the continuous engine, one
torch thread; the pair runs 24 times with the two sides' order alternating (ABBA), and the gate judges
trials: a paired t-test on the per-trial changes of median TPOT. On the shared development machine
identical back-to-back runs differ by about 10% (sd) in median TPOT, every request moving together,
and the machine's speed wanders on a scale of seconds; see docs/gate.md."""

from __future__ import annotations

import json

import pytest

from harness.cli import main

pytestmark = pytest.mark.bench

PAIRS = 20
ARGV = ["calibrate", "--workload", "chat-small", "--requests", "16", "--rate", "1000", "--engine", "continuous",
        "--pairs", str(PAIRS), "--trials", "24", "--threads", "1", "--slowdown", "0.10", "--rule", "tpot.p50 <= +5%",
        "--alpha", "0.01", "--max-false-alarm", "0.05", "--min-detection", "0.95", "--no-progress"]  # fmt: skip


def test_gate_calibration(tmp_path, capsys):
    out = tmp_path / "calibration"
    code = main([*ARGV, "--out", str(out)])
    print(capsys.readouterr().out)
    s = json.loads((out / "calibration.json").read_text())["summary"]
    print(f"false alarms {s['false_alarm']['failed']}/{PAIRS}, detections {s['detection']['failed']}/{PAIRS}")
    (noise,) = json.loads((out / "calibration.json").read_text())["noise"]
    print(f"one trial's change sd {noise['trial_sd']:.1%}; trials needed {noise['trials_for_95pct_detection']}")
    assert s["false_alarm"]["pairs"] == s["detection"]["pairs"] == PAIRS
    assert s["false_alarm"]["rate"] <= 0.05
    assert s["detection"]["rate"] >= 0.95
    assert code == 0
