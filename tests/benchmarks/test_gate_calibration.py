"""Gate calibration on the embedded model (`make bench`): does the gate catch what it says it would?

The gate promises, through its own needed-trials computation (`harness.gate.calibration.trials_needed`, the
judge's `samples_needed` at power 0.95: the `noise` of `calibration.json`), that with N trials per side a
10% per-step slowdown fails the rule `tpot.p50 <= +5%` (alpha 0.01) in 95% of gates. N depends on this
machine's run-to-run noise, so it is measured, not written down here:

1. pilot: `PILOT_PAIRS` A/A and slowdown pairs of `PILOT_TRIALS` trials measure one trial's noise and the
   slowdown's effect, and the calibration says how many trials per side 95% detection needs;
2. the benchmark: `PAIRS` pairs of each kind at that many trials. It asserts that the targets (false alarms
   <= 5%, detection >= 95%) are not *missed*: neither exact 95% interval lies wholly on the wrong side. 20
   pairs can refute the promise but not confirm it ("met" needs 72 pairs with no miss), and a 95%-power
   promise catches 19 or 20 of 20 only three times in four, so asking for the point rates would fail a
   gate that keeps its word.

Each pair replays one seeded 16-request burst of chat-small on the continuous engine, one torch thread, the two
sides' order alternating (ABBA); the gate judges trials (a paired t-test on per-trial changes of median TPOT).

How long: a 16-request run took 1.84 s on the 2-core machine (the 24-trial calibration: 1,920 runs in 59 min),
so the pilot (2 x 4 pairs x 8 trials x 2 runs) takes about 4 minutes and the benchmark 2 x 20 x N x 2 runs. With
one trial's sd about 10% and the slowdown's measured +12% (docs/gate.md) N is about 44, about 1 h 50 min; at sd
12%, or an effect of exactly +10%, N is 63-76 and it takes 2.5-3 hours. The test prints its estimate from the
pilot's own pace before the benchmark starts, and the measured time at the end.
"""

from __future__ import annotations

import json
import time

import pytest

from harness.cli import main

pytestmark = pytest.mark.bench

PILOT_PAIRS, PILOT_TRIALS, PAIRS = 4, 8, 20
RULE = "tpot.p50 <= +5%"
ARGV = ["calibrate", "--workload", "chat-small", "--requests", "16", "--rate", "1000", "--engine", "continuous",
        "--threads", "1", "--slowdown", "0.10", "--rule", RULE, "--alpha", "0.01", "--max-false-alarm", "0.05",
        "--min-detection", "0.95", "--no-progress"]  # fmt: skip


def calibrate(out, pairs: int, trials: int) -> dict:
    main([*ARGV, "--pairs", str(pairs), "--trials", str(trials), "--out", str(out)])
    return json.loads((out / "calibration.json").read_text())


def test_gate_calibration(tmp_path, capsys):
    pilot = calibrate(tmp_path / "pilot", PILOT_PAIRS, PILOT_TRIALS)
    (noise,) = pilot["noise"]
    needed = noise["trials_for_95pct_detection"]
    per_run = sum(p["seconds"] for p in pilot["pairs"]) / (len(pilot["pairs"]) * PILOT_TRIALS * 2)
    print(capsys.readouterr().out)
    print(f"pilot: one trial's change sd {noise['trial_sd']:.1%}, slowdown {noise['slowdown_mean_change']:+.1%}; "
          f"the gate needs {needed} trials per side for 95% detection")  # fmt: skip
    assert noise["slowdown_past_threshold"], "the injected slowdown stayed within the rule's tolerance"
    assert needed is not None, "more than 1000 trials per side: this machine cannot calibrate the rule"
    minutes = 2 * PAIRS * needed * 2 * per_run / 60
    print(f"benchmark: {PAIRS} pairs of each kind at {needed} trials, about {minutes:.0f} min at the pilot's pace")
    started = time.perf_counter()
    s = calibrate(tmp_path / "calibration", PAIRS, needed)["summary"]
    print(capsys.readouterr().out)
    print(f"false alarms {s['false_alarm']['failed']}/{PAIRS}, detections {s['detection']['failed']}/{PAIRS} "
          f"at {needed} trials: {s['outcome']}, {(time.perf_counter() - started) / 60:.0f} min")  # fmt: skip
    assert s["false_alarm"]["pairs"] == s["detection"]["pairs"] == PAIRS
    assert s["outcome"] != "missed", s
