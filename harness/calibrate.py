"""Gate calibration: how often the gate cries wolf, and how often it catches a real slowdown.

A/A pairs run the same engine twice on one schedule: every failing verdict is a false alarm. Slowdown
pairs give the candidate an injected per-step slowdown (`slowdown=0.1`: every engine step takes 10%
longer): every failing verdict is a detection. The two kinds alternate, so drift in the machine's
load lands on both alike, and within a pair the engines' order alternates across trials (ABBA), so
whichever runs second is not always the same side. Each pair gets its own workload seed, so the rates
describe the gate over schedules, not over one lucky schedule.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.errors import HarnessInputError
from harness.gate import GateConfig, evaluate, sample_from_records
from harness.metrics import load_records

CALIBRATION_SCHEMA_VERSION = 1
KINDS = ("aa", "slowdown")


@dataclass(frozen=True)
class CalibrationPlan:
    pairs: int = 20  # of each kind
    slowdown: float = 0.10
    trials: int = 1  # interleaved repeats per pair, pooled by the gate
    seed: int = 0
    max_false_alarm: float = 0.05  # targets: the command exits 1 when either is missed
    min_detection: float = 0.95


@dataclass
class PairResult:
    kind: str
    index: int
    seed: int
    failed: bool
    seconds: float
    load_average: float  # the machine's 1-minute load when the pair ended: context for a noisy result
    rules: list[dict[str, Any]]


LoadWorkload = Callable[[int], Any]  # seed -> Workload
RunOne = Callable[[Any, Sequence[Any], Path], None]  # workload, engine specs in run order, run directory


def pair_specs(spec: Any, slowdown: float) -> dict[str, tuple[Any, Any]]:
    """(baseline, candidate) engine specs for each kind of pair."""
    if not spec.in_process:
        raise HarnessInputError(f"calibrate: --engine {spec.kind}: the injected slowdown needs an in-process engine")
    base = dataclasses.replace(spec, label="baseline")
    same = dataclasses.replace(spec, label="candidate")
    slow = dataclasses.replace(spec, label="candidate", options={**spec.options, "slowdown": slowdown})
    return {"aa": (base, same), "slowdown": (base, slow)}


def run_pair(kind: str, index: int, plan: CalibrationPlan, specs: tuple[Any, Any], config: GateConfig,
             load: LoadWorkload, run_one: RunOne, out: Path) -> PairResult:  # fmt: skip
    started = time.perf_counter()
    seed = plan.seed + index
    workload = load(seed)
    frames = []
    for trial in range(plan.trials):
        order = specs if (index + trial) % 2 == 0 else specs[::-1]
        run_dir = out / f"{kind}-{index:02d}" / f"t{trial}"
        if run_dir.exists():
            raise HarnessInputError(f"calibrate: {run_dir} exists; give a new --out")
        run_one(workload, list(order), run_dir)
        frames.append(load_records(run_dir / "records.jsonl").assign(trial=trial))
    records = pd.concat(frames, ignore_index=True)
    verdict = evaluate(config, sample_from_records(records, engine="baseline", source=f"{kind}-{index:02d}"),
                       sample_from_records(records, engine="candidate", source=f"{kind}-{index:02d}"))  # fmt: skip
    rules = [{"rule": r.rule, "status": r.status, "change": r.change, "p_value": r.p_value, "trial_sd": r.trial_sd,
              "threshold_kind": r.threshold_kind, "threshold": r.threshold} for r in verdict.results]  # fmt: skip
    return PairResult(kind, index, seed, not verdict.passed, time.perf_counter() - started, os.getloadavg()[0], rules)


def calibrate(plan: CalibrationPlan, spec: Any, config: GateConfig, load: LoadWorkload, run_one: RunOne, out: Path,
              log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    specs = pair_specs(spec, plan.slowdown)
    results: list[PairResult] = []
    for index in range(plan.pairs):
        for kind in KINDS:
            r = run_pair(kind, index, plan, specs[kind], config, load, run_one, out)
            results.append(r)
            shown = ", ".join(f"{x['rule']}: {_pct(x['change'])} p={_num(x['p_value'])} {x['status']}" for x in r.rules)
            log(f"  {kind:8} pair {index:2d}: {'FAIL' if r.failed else 'pass'}  {shown}  "
                f"({r.seconds:.0f} s, load {r.load_average:.1f})")  # fmt: skip
            _write(out, plan, config, results)
    return _write(out, plan, config, results)


def trials_needed(effect: float, threshold: float, trial_sd: float, alpha: float, power: float = 0.95,
                  most: int = 1000) -> int | None:  # fmt: skip
    """Fewest trials per side for a paired trial gate to fail on a change of `effect` with probability `power`.

    The gate fails when the mean change is past `threshold` and its one-sided t-test has p < alpha: the
    first is normal, the second a noncentral t; both hold at least as often as the sum of their misses
    allows. All on the tested scale (log ratios for relative rules). None when no n up to `most` clears
    it (the effect is within the threshold, or too small for the noise).
    """
    if not (np.isfinite(trial_sd) and trial_sd > 0) or effect <= threshold:
        return None
    for n in range(3, most + 1):
        se = trial_sd / np.sqrt(n)
        past = stats.norm.sf((threshold - effect) / se)  # P(mean change past the threshold)
        significant = stats.nct.sf(stats.t.ppf(1.0 - alpha, n - 1), n - 1, effect / se)  # P(t-test p < alpha)
        if 1.0 - (1.0 - past) - (1.0 - significant) >= power:  # both at once, at least (Bonferroni)
            return n
    return None


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
        out.append({"rule": text, "scale": "log ratio" if kind == "relative" else "difference",
                    "trial_sd": sd, "aa_mean_change": float(back(np.mean(aa))) if aa else None,
                    "slowdown_mean_change": float(back(effect)) if slow else None, "slowdown_past_threshold": past,
                    "trials_for_95pct_detection": trials_needed(sign * effect, threshold, sd, alpha) if past
                    else None})  # fmt: skip
    return out


def summary(plan: CalibrationPlan, results: list[PairResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, name in (("aa", "false_alarm"), ("slowdown", "detection")):
        done = [r for r in results if r.kind == kind]
        k, n = sum(r.failed for r in done), len(done)
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact") if n else None
        out[name] = {"failed": k, "pairs": n, "rate": k / n if n else None,
                     "ci95": [ci.low, ci.high] if ci else None}  # fmt: skip
    fa, det = out["false_alarm"]["rate"], out["detection"]["rate"]
    out["targets"] = {"max_false_alarm": plan.max_false_alarm, "min_detection": plan.min_detection}
    out["met"] = fa is not None and det is not None and fa <= plan.max_false_alarm and det >= plan.min_detection
    return out


def _write(out: Path, plan: CalibrationPlan, config: GateConfig, results: list[PairResult]) -> dict[str, Any]:
    data = {
        "schema_version": CALIBRATION_SCHEMA_VERSION,
        "plan": dataclasses.asdict(plan),
        "rules": [r.text for r in config.rules],
        "alpha": config.alpha,
        "summary": summary(plan, results),
        "noise": noise(results, config.alpha),
        "pairs": [dataclasses.asdict(r) for r in results],
    }
    (out / "calibration.json").write_text(json.dumps(data, indent=2, default=_none) + "\n")
    return data


def _none(value: Any) -> None:
    return None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"
