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
PLAN_ASSURANCE = 0.8  # the share of pilots whose planned trials deliver the promised power
MOST_TRIALS = 10_000  # per side: beyond this the calibration says "more than"


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

    @property
    def word(self) -> str:
        """The pair's gate verdict as the gate would say it: a rule that cannot tell (or had no data) does not
        pass the gate (exit 3), though calibration counts only regressions as alarms and detections."""
        if self.failed:
            return "FAIL"
        return "cannot tell" if any(r["status"] in ("inconclusive", "no_data") for r in self.rules) else "pass"


def rule_rows(verdict: Any) -> list[dict[str, Any]]:
    """A pair's verdict (`harness.gate.Verdict`) per rule, as `PairResult.rules` holds it."""
    return [
        {
            "rule": r.rule,
            "status": r.status,
            "change": r.change,
            "p_value": r.p_value,
            "trial_sd": r.trial_sd,
            "threshold_kind": r.threshold_kind,
            "threshold": r.threshold,
        }
        for r in verdict.results
    ]


def trials_needed(
    effect: float, threshold: float, trial_sd: float, alpha: float, power: float = 0.95, most: int = MOST_TRIALS
) -> int | None:
    """Fewest trials per side (at least 3, auto's default) for a paired trial gate to fail on a change of
    `effect` with probability `power`: the gate fails when the lower end of the change's t-interval is past
    `threshold` (harness.judge.verdict). On the tested scale (log ratios for relative rules). None when no n
    up to `most` clears it (the effect is within the threshold, or too small for the noise). `effect` and
    `trial_sd` are taken as exact: `plan_trials` plans on a pilot's estimates of them."""
    if effect <= threshold:
        return None
    n = samples_needed(trial_sd, effect - threshold, alpha, small=True, power=power)
    return None if n is None or n > most else max(n, 3)


@dataclass(frozen=True)
class Pilot:
    """What a pilot measured on the tested scale, signed so that a larger effect is a worse regression."""

    effect: float  # the mean of the slowdown pairs' changes
    effect_se: float  # its standard error: the spread of those changes over sqrt(pairs)
    effect_df: int  # slowdown pairs - 1
    sd: float  # one trial's change: the root of the pairs' pooled trial variances
    sd_df: int  # pairs x (trials - 1)


@dataclass(frozen=True)
class TrialPlan:
    effect_low: float  # the bounds the plan was made on
    sd_high: float
    trials: int | None  # None: no n up to the cap catches an effect at the bound (or the bound is within it)


def plan_trials(
    pilot: Pilot, threshold: float, alpha: float, power: float = 0.95, assurance: float = PLAN_ASSURANCE
) -> TrialPlan:
    """Trials per side that give the gate `power` against the pilot's effect in at least `assurance` of
    pilots, the pilot's own uncertainty included (`trials_needed` on its point estimates gives `power` in
    about half of them: an effect estimated high or a noise estimated low shrinks n).

    With q = 1 - (1 - assurance) / 2, n = trials_needed(effect_low, threshold, sd_high) where

        effect_low = effect - t(q; effect_df) * effect_se           (one-sided t bound on the effect)
        sd_high = sd * sqrt(sd_df / chi2(1 - q; sd_df))             (one-sided chi-square bound on the sd)

    Each bound misses the truth with probability 1 - q, so both hold in at least `assurance` of pilots
    (Bonferroni: no independence needed); power rises with the effect and falls with the noise, so when
    both hold the truth needs at most n. The sd's upper bound is Browne's (R. H. Browne, "On the use of a
    pilot sample for sample size determination", Statistics in Medicine 14, 1933-1940, 1995; reviewed by
    S. A. Julious, "Sample sizes for clinical trials with Normal data", Statistics in Medicine 23,
    1921-1986, 2004); the effect's is the same argument applied to the mean. Assumes normal trial changes
    and slowdown pairs that estimate one effect."""
    q = 1.0 - (1.0 - assurance) / 2.0
    effect_low = pilot.effect - float(stats.t.ppf(q, pilot.effect_df)) * pilot.effect_se
    sd_high = pilot.sd * float(np.sqrt(pilot.sd_df / stats.chi2.ppf(1.0 - q, pilot.sd_df)))
    return TrialPlan(effect_low, sd_high, trials_needed(effect_low, threshold, sd_high, alpha, power))


def noise(results: list[PairResult], alpha: float, trials: int) -> list[dict[str, Any]]:
    """Per rule judged by trials: the run-to-run noise the pairs measured (each of `trials` trials per side),
    the changes, and the trials a gate needs on this machine to catch the injected slowdown in 95% of runs:
    planned with the pilot's uncertainty (`plan_trials`), and the naive count that takes its estimates as
    exact (`trials_needed` on the mean change and the A/A pairs' median sd), for comparison."""
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
        # the pooled variance over every pair: a slowdown shifts a trial's change, the noise is the machine's
        variances = [x["trial_sd"] ** 2 for xs in got.values() for x in xs if x.get("trial_sd") is not None]
        pooled = float(np.sqrt(np.mean(variances)))
        plan, note = None, None
        if not past:
            note = "none, the slowdown stayed within the threshold"
        elif len(slow) < 2:
            note = "cannot plan: one slowdown pair does not bound its effect"
        else:
            pilot = Pilot(
                sign * effect,
                float(np.std(slow, ddof=1) / np.sqrt(len(slow))),
                len(slow) - 1,
                pooled,
                len(variances) * (trials - 1),
            )
            plan = plan_trials(pilot, threshold, alpha)
            if plan.trials is None:
                note = (
                    f"more than {MOST_TRIALS}"
                    if plan.effect_low > threshold
                    else "cannot plan: the pilot's lower bound on the slowdown is within the threshold"
                )
        out.append(
            {
                "rule": text,
                "scale": "log ratio" if kind == "relative" else "difference",
                "trial_sd": sd,
                "aa_mean_change": float(back(np.mean(aa))) if aa else None,
                "slowdown_mean_change": float(back(effect)) if slow else None,
                "slowdown_past_threshold": past,
                "trials_naive": trials_needed(sign * effect, threshold, sd, alpha) if past else None,
                "plan_assurance": PLAN_ASSURANCE,
                "trial_sd_pooled": pooled,
                "trial_sd_bound": plan.sd_high if plan else None,
                "slowdown_change_bound": float(back(sign * plan.effect_low)) if plan else None,
                "trials_for_95pct_detection": plan.trials if plan else None,
                "plan_note": note,
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
