"""Gate calibration from a pool of real trials (harness/gate/resample.py): drawn pairs are judged by the gate
itself and counted by the calibration's own code, so its error rates come out in minutes, not hours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.errors import HarnessInputError
from harness.gate import GateConfig, rules_from_texts
from harness.gate.calibration import CalibrationPlan, noise, summary
from harness.gate.resample import FIELDS, drawn_pairs, load_pool, write_pool

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gate_calibration" / "aa-pool.csv"


def _pool(tmp_path: Path, trial_sd: float = 0.05) -> Path:
    """Eight trials (four back-to-back pairs) of 16 requests whose TPOTs share a per-trial factor (run-to-run
    noise) and vary per request."""
    rng = np.random.default_rng(0)
    rows = []
    for trial in range(8):
        factor = np.exp(rng.normal(0.0, trial_sd))
        for i in range(16):
            rows.append(
                {
                    "trial": trial,
                    "request_id": f"q{i}",
                    "t_scheduled": i * 0.001,
                    "ttft_s": 0.05,
                    "tpot_s": 0.004 * factor * np.exp(rng.normal(0.0, 0.05)),
                    "output_tokens": 12,
                }
            )
    path = tmp_path / "pool.csv"
    write_pool(pd.DataFrame(rows), path)
    return path


def test_drawn_pairs_are_judged_by_the_gate_and_counted_as_calibrate_counts(tmp_path: Path) -> None:
    pool = load_pool(_pool(tmp_path))
    config = GateConfig(alpha=0.01, rules=rules_from_texts(["tpot.p50 <= +5%"]))
    plan = CalibrationPlan(pairs=4, slowdown=0.5, trials=8)
    results = drawn_pairs(pool, plan, config)
    assert [r.kind for r in results] == ["aa", "slowdown"] * 4
    assert all(r.rules[0]["rule"] == "tpot.p50 <= +5%" for r in results)
    s = summary(plan, results)
    assert s["detection"]["failed"] == 4 and s["false_alarm"]["failed"] == 0  # a +50% shift: every pair caught
    (measured,) = noise(results, config.alpha, plan.trials)
    assert measured["slowdown_mean_change"] == pytest.approx(0.5, abs=0.1)
    assert measured["trials_for_95pct_detection"] is not None
    again = drawn_pairs(pool, plan, config)  # seeded: the same draws, the same verdicts
    assert [r.rules[0]["change"] for r in again] == [r.rules[0]["change"] for r in results]


def test_the_committed_pool_is_a_real_aa_run() -> None:
    pool = load_pool(FIXTURE)
    assert len(pool.trials) == 24 and all(len(a) == len(b) == 16 for a, b in pool.trials)
    assert all((side["tpot_s"] > 0).all() for pair in pool.trials for side in pair)


def test_a_bad_pool_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("trial,request_id\n0,a\n")
    with pytest.raises(HarnessInputError, match=r"bad\.csv: no column 't_scheduled'") as caught:
        load_pool(path)
    assert "\n" not in str(caught.value)
    path.write_text(",".join(FIELDS) + "\n0,a,0,x,0.1,3\n")
    with pytest.raises(HarnessInputError, match="not a number"):
        load_pool(path)
