"""Two engine runs compared metric by metric: the table metrics.json, `batchmark compare` and the report
all show (one code path, so one run shows one p-value everywhere).

- Paired (when `harness.judge.pairing.decide_pairing`, the gate's decision too, says the runs replayed
  one schedule): per-request differences b - a, the median difference with a bootstrap interval, and the
  Wilcoxon signed-rank test on the differences.
- Unpaired: the difference of medians with a bootstrap interval (each sample resampled on its own), the
  Mann-Whitney U test (does one tend to be larger?) and the two-sample Kolmogorov-Smirnov test (do the
  distributions differ at all?), two-sided.

p-values within one comparison are Holm-adjusted over its metrics (harness.judge.tests.holm);
"significant" means the adjusted p-value of the primary test is below `ALPHA`.

The quantity differs from the gate's (a change of the statistic itself, one-sided against a tolerance,
by trial when the runs hold several): `QUANTITY` names it wherever the table is shown, and
docs/metrics.md says when the two can disagree.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.judge.pairing import PairSide, decide_pairing
from harness.judge.tests import holm, two_sided_signed_rank
from harness.metrics import paired_deltas, percentiles
from harness.metrics.stats import bootstrap_quantiles, scipy_stats

ALPHA = 0.05
METRICS = ("ttft", "tpot", "e2e", "queue_delay", "normalized_latency")
N_BOOT = 1000
# what `delta`, its interval and the test are about, by kind of comparison: two-sided, over the requests of one
# trial a side, Holm-adjusted (not the gate's quantity: harness.gate.verdict.quantity)
QUANTITY = {"paired": "median of per-request b - a", "unpaired": "median b - median a"}


@dataclass
class Table:
    """One comparison's per-metric rows (index: metric) and how its requests were matched."""

    kind: str  # "paired" or "unpaired"
    reason: str
    table: pd.DataFrame
    paired_on: list[str]
    paired_requests: int = 0
    only_in_a: int = 0
    only_in_b: int = 0

    @property
    def quantity(self) -> str:
        return QUANTITY[self.kind]


def compare_latencies(
    a: PairSide, b: PairSide, latencies_a: pd.DataFrame, latencies_b: pd.DataFrame, *, seed: int = 0
) -> Table:
    """b against the baseline a (one engine run each), paired when the judge's pairing decision allows it."""
    pairing = decide_pairing(a, b)
    if pairing.paired:
        # decided above; the deltas join on the same request id (and user, in a closed loop)
        deltas = paired_deltas(a.records, b.records, metrics=METRICS, check_schedule=False)
        extra = len(deltas.attrs["only_in_a"]) + len(deltas.attrs["only_in_b"])
        left_out = f" ({extra} unmatched left out)" if extra else ""
        reason = f"{pairing.reason}: {len(deltas):,} requests paired{left_out}"
        return Table(
            "paired",
            reason,
            _finish(_paired_table(deltas, seed)),
            list(deltas.attrs.get("paired_on", ["request_id"])),
            len(deltas),
            len(deltas.attrs.get("only_in_a", [])),
            len(deltas.attrs.get("only_in_b", [])),
        )
    return Table("unpaired", pairing.reason, _finish(_unpaired_table(latencies_a, latencies_b, seed)), [])


def _paired_table(deltas: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Per metric: medians, the median per-request difference with its bootstrap interval, Wilcoxon."""
    rows = {}
    for m in METRICS:
        both = deltas[[f"{m}_a", f"{m}_b", f"{m}_delta"]].dropna()
        d = both[f"{m}_delta"].to_numpy(dtype=np.float64)
        stat, p = two_sided_signed_rank(d)
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


_NOTHING = (
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


def _unpaired_table(latencies_a: pd.DataFrame, latencies_b: pd.DataFrame, seed: int) -> pd.DataFrame:
    rows = {}
    for m in METRICS:
        va = latencies_a[m].to_numpy(dtype=np.float64)
        vb = latencies_b[m].to_numpy(dtype=np.float64)
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
                mw = scipy_stats().mannwhitneyu(va, vb, alternative="two-sided")
                ks = scipy_stats().ks_2samp(va, vb)
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
            row.update(dict.fromkeys(_NOTHING, np.nan), direction=0)
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
