"""Comparing two engine runs request by request when they replayed the same schedule, by distribution
when they did not.

- Paired (same request ids, each scheduled at the same time, at least half the requests in common):
  per-request differences b - a from `harness.metrics.paired_deltas`, the median difference with a
  bootstrap CI from `paired_summary`, and the Wilcoxon signed-rank test (scipy) on the differences.
- Unpaired: the difference of medians with a bootstrap CI (each sample resampled on its own), the
  Mann-Whitney U test (does one tend to be larger?) and the two-sample Kolmogorov-Smirnov test (do
  the distributions differ at all?), both scipy, two-sided.

p-values within one comparison are Holm-adjusted over its metrics; "significant" means the adjusted
p-value of the primary test (Wilcoxon, or Mann-Whitney U) is below `ALPHA`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from harness.metrics import paired_deltas, percentiles
from harness.metrics.stats import bootstrap_quantiles
from harness.records import RecordError
from reports.load import EngineRun, RunData

ALPHA = 0.05
METRICS = ("ttft", "tpot", "e2e", "queue_delay", "normalized_latency")
METRIC_NAMES = {
    "ttft": "TTFT",
    "tpot": "TPOT",
    "e2e": "E2E",
    "queue_delay": "queueing delay",
    "normalized_latency": "normalized latency (E2E / tokens)",
}
MIN_PAIRED_SHARE = 0.5
N_BOOT = 1000


@dataclass
class Comparison:
    """Two engine runs compared: paired per request when their schedules match, else by distribution."""

    a: EngineRun  # the baseline
    b: EngineRun
    kind: str  # "paired" or "unpaired"
    reason: str
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.b.label} vs {self.a.label}"

    @property
    def test_name(self) -> str:
        return "Wilcoxon signed-rank (paired)" if self.kind == "paired" else "Mann-Whitney U and Kolmogorov-Smirnov"

    def to_json(self) -> dict[str, Any]:
        rows = self.table.reset_index().to_dict(orient="records")
        return {
            "a": self.a.label,
            "b": self.b.label,
            "kind": self.kind,
            "reason": self.reason,
            "test": self.test_name,
            "alpha": ALPHA,
            "metrics": rows,
            "notes": self.notes,
        }


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN)."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok])]
    m = ok.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def _pairing(a: EngineRun, b: EngineRun) -> tuple[pd.DataFrame | None, str]:
    ids_a = set(a.records["request_id"].astype(str))
    ids_b = set(b.records["request_id"].astype(str))
    common = len(ids_a & ids_b)
    if common < MIN_PAIRED_SHARE * max(len(ids_a), len(ids_b)) or common < 2:
        return None, f"only {common} request ids in common: not the same schedule"
    if a.records["request_id"].duplicated().any() or b.records["request_id"].duplicated().any():
        return None, "duplicate request ids"
    try:
        deltas = paired_deltas(a.records, b.records, metrics=METRICS)
    except RecordError as exc:
        return None, f"not the same schedule ({exc})"
    extra = len(deltas.attrs["only_in_a"]) + len(deltas.attrs["only_in_b"])
    why = f"same schedule: {len(deltas):,} requests paired by request id and scheduled time"
    return deltas, why + (f" ({extra} unmatched left out)" if extra else "")


def _wilcoxon(d: np.ndarray) -> tuple[float, float]:
    if d.size == 0:
        return np.nan, np.nan
    if not np.any(d):
        return 0.0, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.wilcoxon(d)
    return float(res.statistic), float(res.pvalue)


def _paired_table(deltas: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Per metric: medians, the median per-request difference with its bootstrap CI (the same estimator
    as `harness.metrics.paired_summary`, without its costlier mean-delta bootstrap), Wilcoxon."""
    rows = {}
    for m in METRICS:
        both = deltas[[f"{m}_a", f"{m}_b", f"{m}_delta"]].dropna()
        d = both[f"{m}_delta"].to_numpy(dtype=np.float64)
        stat, p = _wilcoxon(d)
        med = percentiles(d, (50.0,), n_boot=N_BOOT, seed=seed).iloc[0]
        lower, higher = (float((d < 0).mean()), float((d > 0).mean())) if d.size else (np.nan, np.nan)
        rows[m] = {
            "n_a": int(d.size),
            "n_b": int(d.size),
            "median_a": float(both[f"{m}_a"].median()) if d.size else np.nan,
            "median_b": float(both[f"{m}_b"].median()) if d.size else np.nan,
            "delta": med["value"],
            "ci_low": med["ci_low"],
            "ci_high": med["ci_high"],
            "effect": lower,
            "effect_name": "share of requests where b is lower",
            "direction": -1 if lower > higher else (1 if higher > lower else 0),
            "test": "Wilcoxon signed-rank",
            "statistic": stat,
            "p_value": p,
            "ks_statistic": np.nan,
            "ks_p_value": np.nan,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def _median_diff_ci(a: np.ndarray, b: np.ndarray, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    ba = bootstrap_quantiles(np.sort(a), np.array([0.5]), N_BOOT, rng)[:, 0]
    bb = bootstrap_quantiles(np.sort(b), np.array([0.5]), N_BOOT, rng)[:, 0]
    low, high = np.quantile(bb - ba, [ALPHA / 2, 1 - ALPHA / 2])
    return float(low), float(high)


def _unpaired_table(a: EngineRun, b: EngineRun, seed: int) -> pd.DataFrame:
    rows = {}
    for m in METRICS:
        va = a.latencies[m].to_numpy(dtype=np.float64)
        vb = b.latencies[m].to_numpy(dtype=np.float64)
        va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
        row: dict[str, Any] = {
            "n_a": int(va.size),
            "n_b": int(vb.size),
            "test": "Mann-Whitney U",
            "effect_name": "P(b < a) (probability of superiority)",
        }
        if va.size and vb.size:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mw = sps.mannwhitneyu(va, vb, alternative="two-sided")
                ks = sps.ks_2samp(va, vb)
            low, high = _median_diff_ci(va, vb, seed)
            ma, mb = float(np.median(va)), float(np.median(vb))
            effect = float(mw.statistic) / (va.size * vb.size)  # U of a: P(a > b) + P(a = b) / 2
            row.update(
                median_a=ma,
                median_b=mb,
                delta=mb - ma,
                ci_low=low,
                ci_high=high,
                effect=effect,
                direction=-1 if effect > 0.5 else (1 if effect < 0.5 else 0),
                statistic=float(mw.statistic),
                p_value=float(mw.pvalue),
                ks_statistic=float(ks.statistic),
                ks_p_value=float(ks.pvalue),
            )
        else:
            nothing = (
                "median_a",
                "median_b",
                "delta",
                "ci_low",
                "ci_high",
                "effect",
                "statistic",
                "p_value",
                "ks_statistic",
                "ks_p_value",
            )
            row.update(dict.fromkeys(nothing, np.nan), direction=0)
        rows[m] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def _finish(table: pd.DataFrame) -> pd.DataFrame:
    table["p_holm"] = holm(table["p_value"].to_numpy(dtype=np.float64))
    table["rel_change"] = table["delta"] / table["median_a"].where(table["median_a"] != 0)
    sig = table["p_holm"] < ALPHA
    table["verdict"] = np.where(
        sig & (table["direction"] < 0),
        "b lower",
        np.where(sig & (table["direction"] > 0), "b higher", "no significant difference"),
    )
    table.index.name = "metric"
    return table


def compare(a: EngineRun, b: EngineRun, *, seed: int = 0) -> Comparison:
    """b against the baseline a, paired when the schedule allows it."""
    deltas, reason = _pairing(a, b)
    if deltas is not None:
        return Comparison(a, b, "paired", reason, _finish(_paired_table(deltas, seed)))
    return Comparison(a, b, "unpaired", reason, _finish(_unpaired_table(a, b, seed)))


def baseline(engines: list[EngineRun]) -> EngineRun:
    """The engine others are compared against: the first static one, else the first."""
    return next((er for er in engines if "static" in er.engine), engines[0])


def plan(runs: list[RunData]) -> list[tuple[EngineRun, EngineRun]]:
    """Within each run, every engine against the run's baseline; across runs, each engine of a later run
    against the same engine of the first run (before/after)."""
    pairs: list[tuple[EngineRun, EngineRun]] = []
    for run in runs:
        engines = run.primary()
        if len(engines) > 1:
            base = baseline(engines)
            pairs.extend((base, er) for er in engines if er is not base)
    first = {er.engine: er for er in runs[0].primary()} if runs else {}
    for run in runs[1:]:
        pairs.extend((first[er.engine], er) for er in run.primary() if er.engine in first)
    return pairs


def compare_runs(runs: list[RunData], *, seed: int = 0) -> list[Comparison]:
    """The comparisons of `plan`, between engine runs that have records (not another tool's aggregates)."""
    return [compare(a, b, seed=seed) for a, b in plan(runs) if not (a.records.empty or b.records.empty)]
