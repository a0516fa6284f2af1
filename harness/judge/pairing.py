"""Whether two samples can be compared request by request.

Pairing is valid only when both runs replayed the identical schedule: the same requests, scheduled at
the same times. Then each request's delta removes everything the two runs share (its prompt and
output length, the load around it), and far smaller differences are detectable. Closed loops never
pair automatically: their arrival times follow each run's own pace.

Two entry points remain, and they are not folded into one because they answer different questions and
folding them would change verdicts users already rely on (tests/reports/test_one_judge.py checks that
they agree where both apply: one open-loop trial a side on one schedule):
- `decide_pairing` (the gate): two run directories, any trials (pooled on trial and request id), a
  user-set mode (auto / paired / unpaired) and an absolute minimum of shared requests; a closed loop
  never pairs on auto (its check is the scheduled time, which there follows each run's own pace).
- `pair_requests` (the comparison table: metrics.json, `compare`, the report): the engines of one run
  on trial 0, which pair when at least half their request ids are shared; a closed loop pairs on
  request and user (its users send the same requests in the same order to every engine of the run,
  only their pace differs), so the schedule check is off there.
Both judge a schedule with one tolerance, `SCHEDULE_ATOL_S`. The one real disagreement is the closed
loop (the gate: unpaired; the comparison: paired on request and user); making them one rule means
choosing one of the two for both, a change of verdicts to decide on its own, not in passing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pandas as pd

from harness.errors import HarnessInputError


class RunSample(Protocol):
    """What pairing reads of a side (harness.gate.inputs.RunSample has it)."""

    trials: list[int]
    records: pd.DataFrame
    closed_loop: bool


SCHEDULE_ATOL_S = 1e-6


@dataclass(frozen=True)
class Pairing:
    """Whether the two sides are compared request by request, on which key, and why."""

    paired: bool
    key: tuple[str, ...]  # the columns that identify a request on both sides
    shared: int  # requests present on both sides
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"paired": self.paired, "key": list(self.key), "shared_requests": self.shared, "reason": self.reason}


def decide_pairing(a: RunSample, b: RunSample, mode: str, min_samples: int) -> Pairing:
    key: tuple[str, ...]
    if a.trials == b.trials:
        key = ("trial", "request_id")
    elif len(a.trials) == 1 and len(b.trials) == 1:
        key = ("request_id",)
    else:
        if mode == "paired":
            raise HarnessInputError(f"pairing = paired: trials differ ({a.trials} vs {b.trials}); pick one (--trial)")
        return Pairing(False, (), 0, f"the runs hold different trials ({a.trials} vs {b.trials})")
    joined = _join(a.records, b.records, key)
    shared = len(joined)
    if mode == "unpaired":
        return Pairing(False, key, shared, "unpaired by configuration")
    if mode == "paired":
        if shared < min_samples:
            raise HarnessInputError(f"pairing = paired: only {shared} requests are in both runs")
        return Pairing(True, key, shared, "paired by configuration (schedule not checked)")
    if a.closed_loop or b.closed_loop:
        return Pairing(False, key, shared, "a closed loop: arrival times follow each run's own pace")
    if shared < min_samples:
        return Pairing(False, key, shared, f"only {shared} requests are in both runs")
    drift = (joined["t_scheduled_a"] - joined["t_scheduled_b"]).abs() > SCHEDULE_ATOL_S
    if drift.any():
        return Pairing(False, key, shared, f"{int(drift.sum())} shared requests were scheduled at different times")
    return Pairing(True, key, shared, "identical schedule")


def _join(a: pd.DataFrame, b: pd.DataFrame, key: tuple[str, ...]) -> pd.DataFrame:
    cols = [*key, "t_scheduled"]
    left = a[cols].drop_duplicates(list(key))
    right = b[cols].drop_duplicates(list(key))
    return left.merge(right, on=list(key), suffixes=("_a", "_b"), how="inner")


def paired_frame(a: pd.DataFrame, b: pd.DataFrame, key: tuple[str, ...], columns: list[str]) -> pd.DataFrame:
    """Rows of both sides matched on `key`, with `{column}_a` and `{column}_b`."""
    left = a[[*key, *columns]].drop_duplicates(list(key))
    right = b[[*key, *columns]].drop_duplicates(list(key))
    return left.merge(right, on=list(key), suffixes=("_a", "_b"), how="inner")


MIN_PAIRED_SHARE = 0.5  # fewer request ids in common than this share of the larger run: not one schedule


def pair_requests(
    a: pd.DataFrame, b: pd.DataFrame, metrics: tuple[str, ...], *, check_schedule: bool = True
) -> tuple[pd.DataFrame | None, str]:
    """Per-request deltas of two engine runs' records (harness.metrics.paired_deltas) when they replayed one
    schedule, else None; with the reason either way. The comparison table's pairing rule."""
    from harness.metrics import paired_deltas
    from harness.records import RecordError

    ids_a = set(a["request_id"].astype(str))
    ids_b = set(b["request_id"].astype(str))
    common = len(ids_a & ids_b)
    if common < MIN_PAIRED_SHARE * max(len(ids_a), len(ids_b)) or common < 2:
        return None, f"only {common} request ids in common: not the same schedule"
    if a["request_id"].duplicated().any() or b["request_id"].duplicated().any():
        return None, "duplicate request ids"
    try:
        deltas = paired_deltas(a, b, metrics=metrics, check_schedule=check_schedule, atol=SCHEDULE_ATOL_S)
    except RecordError as exc:
        return None, f"not the same schedule ({exc})"
    extra = len(deltas.attrs["only_in_a"]) + len(deltas.attrs["only_in_b"])
    why = f"same schedule: {len(deltas):,} requests paired by request id and scheduled time"
    return deltas, why + (f" ({extra} unmatched left out)" if extra else "")
