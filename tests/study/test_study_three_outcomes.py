"""A study's claims end as held / falsified / cannot tell, decided by the judge on the interval over
trials (harness.judge.verdict.decide), never on a mean: one trial gives no interval, so a threshold its
mean meets cannot be told; several trials with a clear effect hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.study.plan import load_plan
from harness.study.runner import PICTURE
from harness.study.verdict import decide

PLAN = """decision = "Does fair lower p99 TTFT by 20% or more?"
workload = "chat-small"
pick = "ttft.p99"
baseline = { engine = "sim" }
variants = [{ name = "fair", change = { policy = "fair" } }]
metrics = [{ name = "ttft.p99", threshold = "<= -20%" }]
slices = { tuning = [0, 5], held_out = [5, 10] }
"""


def _results(baseline: list[float], fair: list[float]) -> list[dict[str, Any]]:
    """Synthetic unit results: the same p99 TTFT on both slices, every trial paired with the baseline's."""
    out = []
    for arm, values in (("baseline", baseline), ("fair", fair)):
        for trial, value in enumerate(values):
            for slice_name in ("tuning", "held_out"):
                out.append(
                    {"arm": arm, "slice": slice_name, "trial": trial, "metrics": {"ttft.p99": value}}
                    | ({} if arm == "baseline" else {"pairing": {"paired": True}})
                )
    return out


def _verdict(tmp_path: Path, baseline: list[float], fair: list[float]) -> dict[str, Any]:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    plan = load_plan(path)
    metrics = list(dict.fromkeys([m.metric for m in plan.metrics] + [plan.pick, *PICTURE]))  # as the CLI's
    return decide(plan, _results(baseline, fair), metrics)


def test_one_trial_whose_mean_meets_the_threshold_cannot_tell(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, [1.0], [0.5])  # -50% at the mean, far past -20%: one trial, no interval
    assert verdict["outcome"] == "cannot_tell" and verdict["pick"] is None
    assert verdict["passing_on_tuning"] == []
    assert any(line.startswith("CANNOT TELL on the tuning slice") for line in verdict["lines"])
    assert any("ttft.p99 <= -20%" in line and "cannot tell" in line for line in verdict["lines"])


def test_several_trials_with_a_clear_effect_hold(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, [1.0, 1.02, 0.98, 1.01, 0.99], [0.5, 0.52, 0.49, 0.51, 0.5])
    assert verdict["outcome"] == "held" and verdict["pick"] == "fair"
    assert any(line.startswith("HELD on the held-out slice: fair") for line in verdict["lines"])


def test_several_trials_that_miss_the_threshold_clearly_find_no_pick(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, [1.0, 1.02, 0.98, 1.01, 0.99], [0.95, 0.97, 0.94, 0.96, 0.95])  # -5%
    assert verdict["outcome"] == "no_pick" and verdict["pick"] is None


def test_several_trials_whose_interval_straddles_the_threshold_cannot_tell(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, [1.0, 1.0, 1.0], [0.6, 0.95, 0.7])  # -25% at the mean, -40%..-5% by trial
    assert verdict["outcome"] == "cannot_tell" and verdict["pick"] is None


def test_a_cannot_tell_names_the_trials_that_would_decide_it(tmp_path: Path) -> None:
    """The study sizes an undecided claim as the gate sizes its trial rules (harness.judge.verdict)."""
    from harness.judge.verdict import samples_needed
    from harness.study.verdict import ALPHA

    baseline, fair = [1.0, 1.0, 1.0], [0.6, 0.95, 0.7]  # -25% at the mean, straddling -20%
    verdict = _verdict(tmp_path, baseline, fair)
    changes = np.array(fair) - 1.0
    n = samples_needed(float(changes.std(ddof=1)), -0.20 - float(changes.mean()), ALPHA, small=True)
    assert n is not None and n > 3
    said = f"ttft.p99 <= -20% (0.75, -25.0% vs baseline [-40.0%, -5.0%]): cannot tell, about {n} trials per arm"
    assert any(said in line for line in verdict["lines"]), verdict["lines"]
    # the wins table carries the same sizing for "fair beats the baseline"
    row = next(r for r in verdict["wins"]["tuning"] if r["metric"] == "ttft.p99")
    assert row["outcome"] == "holds" and row["needs"] is None


def test_one_trial_says_it_needs_two_to_estimate_noise(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, [1.0], [0.5])
    assert any("cannot tell, needs at least 2 trials to estimate noise" in line for line in verdict["lines"])
    row = next(r for r in verdict["wins"]["tuning"] if r["metric"] == "ttft.p99")
    assert row["outcome"] == "cannot_tell" and row["needs"] == "needs at least 2 trials to estimate noise"


def test_identical_trials_keep_the_outcome_and_say_they_show_no_noise(tmp_path: Path) -> None:
    """A deterministic engine repeats itself: three identical trials a side give a zero-width interval. The
    outcome stands (a fact of that engine), and every place that shows it says it rests on copies."""
    from harness.judge.tests import IDENTICAL_TRIALS
    from reports.study import COPIES, arm_table, wins_table

    verdict = _verdict(tmp_path, [1.0, 1.0, 1.0], [0.5, 0.5, 0.5])
    assert verdict["outcome"] == "held" and verdict["pick"] == "fair"
    assert (
        "HELD on the held-out slice: fair (ttft.p99 0.5, -50.0% vs baseline, on identical trials: no run-to-run noise)"
        in verdict["lines"]
    )
    assert verdict["lines"][-1] == f"identical trials: {IDENTICAL_TRIALS}"
    table = verdict["tables"]["tuning"]
    assert table["fair"]["ttft.p99"]["identical"] and table["fair"]["ttft.p99"]["change_identical"]
    row = next(r for r in verdict["wins"]["tuning"] if r["metric"] == "ttft.p99")
    assert row["outcome"] == "holds" and row["identical_trials"]
    assert COPIES in wins_table([row]) and COPIES in arm_table(table, ["ttft.p99"])
    assert "[0.5" not in arm_table(table, ["ttft.p99"])  # no silent [x, x]
    noisy = _verdict(tmp_path, [1.0, 1.02, 0.98, 1.01, 0.99], [0.5, 0.52, 0.49, 0.51, 0.5])
    assert not any("identical" in line for line in noisy["lines"])
