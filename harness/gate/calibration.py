"""Calibration statistics: what the A/A and slowdown pairs say about the gate on this machine.

The pairs are run elsewhere (`harness/calibrate.py` drives engines); here are the numbers: false-alarm and
detection rates with exact binomial intervals, the run-to-run noise per rule, and how many trials a gate
needs to catch the injected slowdown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from harness.judge.verdict import samples_needed

KINDS = ("aa", "slowdown")


@dataclass(frozen=True)
class CalibrationPlan:
    """How many pairs of each kind, the injected slowdown, trials per pair, and the targets to meet."""

    pairs: int = 20  # of each kind
    slowdown: float = 0.10
    trials: int = 1  # interleaved repeats per pair, pooled by the gate
    seed: int = 0
    max_false_alarm: float = 0.05  # targets: the command exits 1 when either is missed
    min_detection: float = 0.95


@dataclass
class PairResult:
    """One calibration pair's verdict, per rule, with the machine's load when it ended."""

    kind: str
    index: int
    seed: int
    failed: bool
    seconds: float
    load_average: float  # the machine's 1-minute load when the pair ended: context for a noisy result
    rules: list[dict[str, Any]]
    node: str | None = None  # the cluster node that ran the pair (--executor ray); None: this machine


def rule_rows(verdict: Any) -> list[dict[str, Any]]:
    """A pair's verdict (`harness.gate.Verdict`) per rule, as `PairResult.rules` holds it."""
    return [{"rule": r.rule, "status": r.status, "change": r.change, "p_value": r.p_value, "trial_sd": r.trial_sd,
             "threshold_kind": r.threshold_kind, "threshold": r.threshold} for r in verdict.results]  # fmt: skip


def trials_needed(
    effect: float, threshold: float, trial_sd: float, alpha: float, power: float = 0.95, most: int = 1000
) -> int | None:
    """Fewest trials per side (at least 3, auto's default) for a paired trial gate to fail on a change of
    `effect` with probability `power`: the gate fails when the lower end of the change's t-interval is past
    `threshold` (harness.judge.verdict). On the tested scale (log ratios for relative rules). None when no n
    up to `most` clears it (the effect is within the threshold, or too small for the noise)."""
    if effect <= threshold:
        return None
    n = samples_needed(trial_sd, effect - threshold, alpha, small=True, power=power)
    return None if n is None or n > most else max(n, 3)


def noise(results: list[PairResult], alpha: float) -> list[dict[str, Any]]:
    """Per rule judged by trials: the run-to-run noise the A/A pairs measured, the changes, and the trials a
    gate needs on this machine to catch the injected slowdown in 95% of runs."""
    out = []
    texts = dict.fromkeys(x["rule"] for r in results for x in r.rules)
    for text in texts:
        got = {kind: [x for r in results if r.kind == kind for x in r.rules if x["rule"] == text] for kind in KINDS}
        sds = [x["trial_sd"] for x in got["aa"] if x.get("trial_sd") is not None]
        if not sds:
            continue
        kind = got["aa"][0]["threshold_kind"]
        scale = np.log1p if kind == "relative" else (lambda v: v)
        aa = [scale(x["change"]) for x in got["aa"] if x["change"] is not None]
        slow = [scale(x["change"]) for x in got["slowdown"] if x["change"] is not None]
        sd, effect = float(np.median(sds)), float(np.mean(slow)) if slow else float("nan")
        threshold = abs(float(scale(got["aa"][0]["threshold"])))
        sign = 1.0 if not slow or effect >= 0 else -1.0  # lower-is-worse rules move down under a slowdown
        back = np.expm1 if kind == "relative" else (lambda v: v)
        past = bool(slow) and sign * effect > threshold
        out.append(
            {
                "rule": text,
                "scale": "log ratio" if kind == "relative" else "difference",
                "trial_sd": sd,
                "aa_mean_change": float(back(np.mean(aa))) if aa else None,
                "slowdown_mean_change": float(back(effect)) if slow else None,
                "slowdown_past_threshold": past,
                "trials_for_95pct_detection": trials_needed(sign * effect, threshold, sd, alpha) if past else None,
            }
        )
    return out


def summary(plan: CalibrationPlan, results: list[PairResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, name in (("aa", "false_alarm"), ("slowdown", "detection")):
        done = [r for r in results if r.kind == kind]
        k, n = sum(r.failed for r in done), len(done)
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact") if n else None
        out[name] = {"failed": k, "pairs": n, "rate": k / n if n else None, "ci95": [ci.low, ci.high] if ci else None}
    out["targets"] = {"max_false_alarm": plan.max_false_alarm, "min_detection": plan.min_detection}
    out["outcome"] = outcome(out["false_alarm"]["ci95"], out["detection"]["ci95"], plan)
    out["met"] = out["outcome"] == "met"
    return out


def outcome(false_alarm_ci: list[float] | None, detection_ci: list[float] | None, plan: CalibrationPlan) -> str:
    """ "met" only when both 95% intervals lie inside the targets, "missed" when either lies wholly outside,
    else "cannot tell": two pairs with no false alarm (CI 0-84%) do not show a 5% false-alarm rate."""
    if false_alarm_ci is None or detection_ci is None:
        return "cannot tell"
    if false_alarm_ci[0] > plan.max_false_alarm or detection_ci[1] < plan.min_detection:
        return "missed"
    if false_alarm_ci[1] <= plan.max_false_alarm and detection_ci[0] >= plan.min_detection:
        return "met"
    return "cannot tell"
