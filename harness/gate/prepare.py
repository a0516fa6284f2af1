"""Per-side tables the rules read: request latencies, pooled token gaps, SLO outcomes and windowed rates.

Rates are cut into equal slices of each trial's steady window so their noise can be seen: one number
per run has no variance to test against. A trial without a usable steady window (a burst, or one that
none of the run's tokens or finishes fell in: `harness.metrics.throughput.rate_problem`) leaves the
rate undefined, and the rule `no_data` with that reason; fewer than `min_samples` requests behind the
rate (finished in the windows, or for token rates streaming in them) does too (harness.gate.judge).
The whole run is not substituted: on a burst its rate is the makespan's, which is not what a
steady-state rule compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.gate.inputs import RunSample
from harness.metrics import SLO, inter_token_latencies, request_latencies, slo_table, steady_window
from harness.metrics.frame import flatten_token_times
from harness.metrics.latency import CENSORED_METRICS
from harness.metrics.reasoning import ttfo
from harness.metrics.stats import censored_reaches
from harness.metrics.throughput import EVENTS, events_problem, missing_window_reason

METRIC_RATES = {"output_tok_s": "output_token_rate", "total_tok_s": "total_token_rate"}  # gate name -> metrics


@dataclass
class Rates:
    """A rate metric cut into slices of the steady window, so its noise can be seen."""

    slices: np.ndarray  # per-slice rates, trial after trial
    value: float  # events in the windows / their total duration
    window: str  # "steady"
    per_trial: dict[int, float] = field(default_factory=dict)  # each trial's events / its window
    requests: int = 0  # successful requests the rate rests on: finished in the windows (tokens: streamed in them)
    event: str = "finish"  # what the rate counts: "finish" or "token"
    problem: str | None = None  # why the rate is undefined (then slices is empty and value NaN)


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
            x = self.latencies[metric].to_numpy(dtype=np.float64)
            if trial is not None:  # the one column's rows, not a copy of the whole table per trial and rule
                x = x[self._trial_rows(trial)]
        return x[np.isfinite(x)]

    def _trial_rows(self, trial: int) -> np.ndarray:
        return self.latencies["trial"].to_numpy() == trial

    def cut_off_note(self, metric: str, side: str, q: float | None) -> str | None:
        """Why `metric`'s quantile q (the mean when None) cannot be judged on this side: requests the run cut
        off while they waited reach it, so it is only a lower bound (harness.metrics.latency); else None."""
        if metric not in CENSORED_METRICS:
            return None
        flags = self.latencies[f"{metric}_censored"].to_numpy(dtype=bool)
        values = self.latencies[f"{metric}_or_wait"].to_numpy(dtype=np.float64)
        if not flags.any() or (q is not None and not censored_reaches(values, flags, [q])[0]):
            return None
        what = "before their first token" if metric == "ttft" else "before they finished"
        return (
            f"{int(flags.sum())} requests on the {side} side were cut off {what} (a stop rule or a timeout), "
            f"so its {metric} is known only as a lower bound; gate error_rate or goodput on such runs"
        )

    def trial_column(self, column: str, trial: int) -> np.ndarray:
        return self.latencies[column].to_numpy()[self._trial_rows(trial)]

    def rates(self, metric: str) -> Rates | None:
        if metric not in self._rates:  # computed on first use: most rule sets name one or two rates
            self._rates[metric] = _rates(self.sample.records, self.latencies, metric, self.buckets)
        return self._rates[metric]


def prepare(sample: RunSample, slo: SLO, buckets: int) -> Prepared:
    lat = request_latencies(sample.records)
    lat["ttfo"] = ttfo(sample.records)  # TTFT itself for a request without reasoning
    lat["meets_slo"] = slo_table(lat, slo)["meets_slo"].to_numpy(dtype=bool)
    lat["failed"] = ~lat["succeeded"].to_numpy(dtype=bool)
    if "user" in sample.records:  # a closed loop pairs on request and user (harness.judge.pairing)
        lat["user"] = sample.records["user"].to_numpy()
    return Prepared(sample, lat, buckets)


def _events(
    records: pd.DataFrame, ok: np.ndarray, meets_slo: np.ndarray, metric: str, flat: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(times, weights) of what a rate counts, as in harness.metrics.throughput and slo.goodput; `flat`: the
    successful requests' token times (None for a rate of finishes)."""
    if metric in ("request_rate", "goodput"):
        keep = ok & meets_slo if metric == "goodput" else ok
        times = records["t_finish"].to_numpy(dtype=np.float64)[keep]
        return times, np.ones(times.size)
    assert flat is not None
    weights = np.ones(flat.size)
    if metric == "total_tok_s":  # prompt tokens count once prefill is known done: at the first token
        first = records["t_first_token"].to_numpy(dtype=np.float64)[ok]
        prompt = records["prompt_tokens"].to_numpy(dtype=np.float64)[ok]
        flat, weights = np.concatenate([flat, first]), np.concatenate([weights, prompt])
    return flat, weights


def _rates(records: pd.DataFrame, lat: pd.DataFrame, metric: str, buckets: int) -> Rates | None:
    slices: list[np.ndarray] = []
    per_trial: dict[int, float] = {}
    total, duration, behind = 0.0, 0.0, 0
    event = EVENTS.get(METRIC_RATES.get(metric, metric), "finish")
    groups = records.groupby("trial", sort=True).indices  # trial -> its rows' positions
    for trial_id, rows in sorted(groups.items()):
        # one trial (the usual run) is the whole table: no copy of it (a gate judges hundreds of small runs)
        whole = len(groups) == 1
        trial = records if whole else records.iloc[rows]
        ok = lat["succeeded"].to_numpy(dtype=bool)
        meets_slo = lat["meets_slo"].to_numpy(dtype=bool)
        if not whole:
            ok, meets_slo = ok[rows], meets_slo[rows]
        window = steady_window(trial)
        # as harness.metrics.throughput.rate_problem, on the successful requests' events already at hand
        flat, owner = flatten_token_times(trial["token_times"].to_numpy()[ok]) if event == "token" else (None, None)
        if window is None:
            problem: str | None = missing_window_reason(trial, "steady")
        elif event == "finish":
            problem = events_problem(trial["t_finish"].to_numpy(dtype=np.float64)[ok], window, "steady", "finish")
        else:
            assert flat is not None
            problem = events_problem(flat, window, "steady", "token")
        if problem is not None or window is None:
            where = f"trial {trial_id}: " if len(groups) > 1 else ""
            return Rates(np.empty(0), float("nan"), "steady", problem=f"{where}{problem}")
        if event == "finish":  # harness.metrics.throughput.finished_in
            finish = trial["t_finish"].to_numpy(dtype=np.float64)
            behind += int((ok & (finish >= window.start) & (finish <= window.end)).sum())
        else:  # requests that streamed a token inside the window
            assert flat is not None and owner is not None
            behind += int(np.unique(owner[(flat >= window.start) & (flat <= window.end)]).size)
        times, weights = _events(trial, ok, meets_slo, metric, flat)
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
    return Rates(np.concatenate(slices), total / duration, "steady", per_trial, behind, event)
