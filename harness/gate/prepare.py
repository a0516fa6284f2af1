"""Per-side tables the rules read: request latencies, pooled token gaps, SLO outcomes and windowed rates.

Rates are cut into equal slices of each trial's steady window (the whole run when there is none, as
in a burst) so their noise can be seen: one number per run has no variance to test against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.gate.inputs import RunSample
from harness.metrics import SLO, inter_token_latencies, request_latencies, run_window, slo_table, steady_window
from harness.metrics.frame import flatten_token_times


@dataclass
class Rates:
    """A rate metric cut into slices of the steady window, so its noise can be seen."""

    slices: np.ndarray  # per-slice rates, trial after trial
    value: float  # events in the windows / their total duration
    window: str  # "steady" or "whole_run" (the first trial's)
    per_trial: dict[int, float] = field(default_factory=dict)  # each trial's events / its window


@dataclass
class Prepared:
    """One side's records with the latencies and SLO verdicts every rule reads, computed once."""

    sample: RunSample
    latencies: pd.DataFrame  # request_latencies plus `meets_slo` and `failed`
    buckets: int
    _itl: np.ndarray | None = None
    _rates: dict[str, Rates | None] = field(default_factory=dict)

    @property
    def itl(self) -> np.ndarray:
        if self._itl is None:
            self._itl = inter_token_latencies(self.sample.records)
        return self._itl

    def latency_values(self, metric: str, trial: int | None = None) -> np.ndarray:
        """A latency metric's finite values, of one trial or of all; ITL pools token gaps."""
        if metric == "itl":
            if trial is None:
                x = self.itl
            else:
                records = self.sample.records
                x = inter_token_latencies(records[records["trial"] == trial])
        else:
            lat = self.latencies if trial is None else self.latencies[self.latencies["trial"] == trial]
            x = lat[metric].to_numpy(dtype=np.float64)
        return x[np.isfinite(x)]

    def trial_column(self, column: str, trial: int) -> np.ndarray:
        return self.latencies.loc[self.latencies["trial"] == trial, column].to_numpy()

    def rates(self, metric: str) -> Rates | None:
        if metric not in self._rates:  # computed on first use: most rule sets name one or two rates
            self._rates[metric] = _rates(self.sample.records, self.latencies, metric, self.buckets)
        return self._rates[metric]


def prepare(sample: RunSample, slo: SLO, buckets: int) -> Prepared:
    lat = request_latencies(sample.records)
    lat["meets_slo"] = slo_table(lat, slo)["meets_slo"].to_numpy(dtype=bool)
    lat["failed"] = ~lat["succeeded"].to_numpy(dtype=bool)
    return Prepared(sample, lat, buckets)


def _events(records: pd.DataFrame, lat: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(times, weights) of what a rate counts, as in harness.metrics.throughput and slo.goodput."""
    ok = lat["succeeded"].to_numpy(dtype=bool)
    if metric in ("request_rate", "goodput"):
        keep = ok & lat["meets_slo"].to_numpy(dtype=bool) if metric == "goodput" else ok
        times = records["t_finish"].to_numpy(dtype=np.float64)[keep]
        return times, np.ones(times.size)
    flat, _ = flatten_token_times(records.loc[ok, "token_times"])
    weights = np.ones(flat.size)
    if metric == "total_tok_s":  # prompt tokens count once prefill is known done: at the first token
        first = records.loc[ok, "t_first_token"].to_numpy(dtype=np.float64)
        prompt = records.loc[ok, "prompt_tokens"].to_numpy(dtype=np.float64)
        flat, weights = np.concatenate([flat, first]), np.concatenate([weights, prompt])
    return flat, weights


def _rates(records: pd.DataFrame, lat: pd.DataFrame, metric: str, buckets: int) -> Rates | None:
    slices: list[np.ndarray] = []
    per_trial: dict[int, float] = {}
    total, duration, kind = 0.0, 0.0, None
    for trial_id, idx in records.groupby("trial", sort=True).groups.items():
        trial = records.loc[idx]
        window = steady_window(trial) or run_window(trial)
        if window is None:
            continue
        kind = kind or window.kind
        times, weights = _events(trial, lat.loc[idx], metric)
        keep = np.isfinite(times)
        counts, _ = np.histogram(
            times[keep], bins=np.linspace(window.start, window.end, buckets + 1), weights=weights[keep]
        )
        slices.append(counts / (window.duration_s / buckets))
        total += float(counts.sum())
        duration += window.duration_s
        per_trial[int(trial_id)] = float(counts.sum()) / window.duration_s
    if not slices:
        return None
    return Rates(np.concatenate(slices), total / duration, kind or "steady", per_trial)
