"""A study's claims end as held / falsified / cannot tell, decided by the judge on the interval over
trials (harness.judge.verdict.decide), never on a mean: one trial gives no interval, so a threshold its
mean meets cannot be told; several trials with a clear effect hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
