"""Whether two samples are compared request by request: one decision for every comparison of two runs
(metrics.json, `compare`, the report, `gate`, `calibrate` through the gate, and the study's arms).

Pairing is valid when both sides replayed the same schedule: the same requests (same id, same prompt
length and token budget), each sent under the same conditions of the workload. Then each request's delta
removes what the two runs share (its prompt and output length), and far smaller differences are
detectable. `decide_pairing` pairs on auto when all of these hold:

- the same trials on both sides (matched on trial and request id), or one trial on each;
- the same workload (fingerprints, where both runs recorded one) and the same kind of loop;
- each request id at most once per trial, and at least `min_samples` and half of the larger side's
  requests in common;
- the same request content: prompt length and `max_tokens` equal for every shared request;
- the schedule: in an open loop each shared request was scheduled at the same time (within
  `SCHEDULE_ATOL_S`). In a closed loop (and a multi-turn replay) the send time follows each engine's own
  pace, so it is no check there; instead each user sends its own fixed list of requests in order
  (harness.loadgen.scenarios.run_closed_loop: `schedule[user::users]`), and requests pair on request id
  and user.

Why a closed loop pairs (the two entry points this replaces disagreed here: the gate never paired a
closed loop, the comparison paired it on request and user). Under no change the two runs are
exchangeable, so a per-request delta is as valid a test as in an open loop; the only thing a closed
loop lacks is the scheduled-time check, which the fixed per-user lists and the content check replace.
And pairing pays there as it does in an open loop: measured on the embedded model (closed-loop-small,
32 requests, 4 trials, docs/measurements/2026-12-04-closed-loop-pairing.md), one request's TTFT and E2E
correlate 0.83-0.99 between two runs of one engine, so the per-request delta keeps 3-48% of the
variance of an unpaired difference. Runs of a run directory therefore pair alike whether their load
was an open or a closed loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from harness.errors import HarnessInputError
from harness.judge.pairing_mode import PairingMode

SCHEDULE_ATOL_S = 1e-6
MIN_PAIRED_SHARE = 0.5  # fewer requests in common than this share of the larger side: not one schedule
_CONTENT = ("prompt_tokens", "max_tokens")  # what makes two records the same request, where both record it


class PairSide(Protocol):
    """What pairing reads of a side (harness.gate.inputs.RunSample and `Side` have it)."""

    records: pd.DataFrame
    closed_loop: bool  # send times followed the engine's pace (closed loop, multi-turn replay)
    fingerprint: str | None  # the workload's, where the run recorded it

    @property
    def trials(self) -> list[int]: ...


@dataclass
class Side:
    """A side of a comparison that is not a gate sample: one engine run's records and what its run says."""

    records: pd.DataFrame
    closed_loop: bool = False
    fingerprint: str | None = None

    @property
    def trials(self) -> list[int]:
        return sorted(int(t) for t in self.records["trial"].unique()) if "trial" in self.records else [0]


def follows_engine(records: pd.DataFrame, manifest: dict[str, Any] | None = None) -> bool:
    """Whether a run's send times followed the engine's own pace, so scheduled times cannot check a pairing:
    its manifest says a closed loop or a multi-turn replay, or (no manifest) every record has a user."""
    settings = (manifest or {}).get("settings") or {}
    scenario = settings.get("scenario") if isinstance(settings.get("scenario"), dict) else {}
    if scenario.get("kind") in ("closed", "sessions") or settings.get("open_loop") is False:
        return True
    if ((manifest or {}).get("workload") or {}).get("closed_loop_users"):
        return True
    return _has_users(records)


def _has_users(records: pd.DataFrame) -> bool:
    return "user" in records.columns and len(records) > 0 and bool(records["user"].notna().all())


@dataclass(frozen=True)
class Pairing:
    """Whether the two sides are compared request by request, on which key, and why."""

    paired: bool
    key: tuple[str, ...]  # the columns that identify a request on both sides
    shared: int  # requests present on both sides
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"paired": self.paired, "key": list(self.key), "shared_requests": self.shared, "reason": self.reason}


def decide_pairing(a: PairSide, b: PairSide, mode: PairingMode = "auto", min_samples: int = 2) -> Pairing:
    """The one pairing decision. `mode` "paired" forces matching by id (the schedule and content unchecked;
    too few shared requests is then bad input), "unpaired" turns it off; `min_samples` is the caller's
    fewest values a comparison may rest on (the gate's min_samples; 2 for the comparison table)."""
    key: tuple[str, ...]
    if a.trials == b.trials:
        key = ("trial", "request_id")
    elif len(a.trials) == 1 and len(b.trials) == 1:
        key = ("request_id",)
    else:
        if mode == "paired":
            raise HarnessInputError(f"pairing = paired: trials differ ({a.trials} vs {b.trials}); pick one (--trial)")
        return Pairing(False, (), 0, f"the runs hold different trials ({a.trials} vs {b.trials})")
    closed = a.closed_loop or b.closed_loop or _has_users(a.records) or _has_users(b.records)
    if closed and _has_users(a.records) and _has_users(b.records):
        key = (*key, "user")
    for name, side in (("baseline", a), ("candidate", b)):
        if side.records.duplicated(list(key)).any():
            if mode == "paired":
                raise HarnessInputError(f"pairing = paired: the {name} repeats request ids within a trial")
            return Pairing(False, key, 0, f"the {name} repeats request ids within a trial")
    joined = _join(a.records, b.records, key)
    shared = len(joined)
    if mode == "unpaired":
        return Pairing(False, key, shared, "unpaired by configuration")
    if mode == "paired":
        if shared < min_samples:
            raise HarnessInputError(f"pairing = paired: only {shared} requests are in both runs")
        return Pairing(True, key, shared, "paired by configuration (schedule not checked)")
    why_not = _why_not(a, b, joined, shared, min_samples, closed)
    if why_not is not None:
        return Pairing(False, key, shared, why_not)
    if closed:
        return Pairing(
            True,
            key,
            shared,
            "same requests from the same users (a closed loop: send times follow "
            "each engine's pace and are not compared)",
        )
    return Pairing(True, key, shared, "same schedule")


def _why_not(a: PairSide, b: PairSide, joined: pd.DataFrame, shared: int, min_samples: int, closed: bool) -> str | None:
    if a.fingerprint and b.fingerprint and a.fingerprint != b.fingerprint:
        return "the runs replayed different workloads (fingerprints differ): one request id names two requests"
    if a.closed_loop != b.closed_loop:
        return "one run was a closed loop and the other not: their schedules differ"
    larger = max(len(a.records), len(b.records))
    if shared < max(min_samples, 2) or shared < MIN_PAIRED_SHARE * larger:
        return f"only {shared} of {larger} requests are in both runs"
    if not closed:
        drift = (joined["t_scheduled_a"] - joined["t_scheduled_b"]).abs() > SCHEDULE_ATOL_S
        if drift.any():
            return f"{int(drift.sum())} shared requests were scheduled at different times"
    for column in _CONTENT:
        if f"{column}_a" in joined and f"{column}_b" in joined:
            x, y = joined[f"{column}_a"], joined[f"{column}_b"]
            differ = x.notna() & y.notna() & (x != y)
            if differ.any():
                return f"{int(differ.sum())} shared request ids carry a different {column}: not the same requests"
    return None


def _join(a: pd.DataFrame, b: pd.DataFrame, key: tuple[str, ...]) -> pd.DataFrame:
    """Both sides' schedule and content columns matched on `key` (unique on each side: the caller checked)."""
    columns = ["t_scheduled", *(c for c in _CONTENT if c in a.columns and c in b.columns)]
    if _same_keys(a, b, key):
        return _side_by_side(a, b, key, columns)
    return a[[*key, *columns]].merge(b[[*key, *columns]], on=list(key), suffixes=("_a", "_b"), how="inner")


def paired_frame(a: pd.DataFrame, b: pd.DataFrame, key: tuple[str, ...], columns: list[str]) -> pd.DataFrame:
    """Rows of both sides matched on `key`, with `{column}_a` and `{column}_b`."""
    if _same_keys(a, b, key) and not a.duplicated(list(key)).any():
        return _side_by_side(a, b, key, columns)
    left = a[[*key, *columns]].drop_duplicates(list(key))
    right = b[[*key, *columns]].drop_duplicates(list(key))
    return left.merge(right, on=list(key), suffixes=("_a", "_b"), how="inner")


def _same_keys(a: pd.DataFrame, b: pd.DataFrame, key: tuple[str, ...]) -> bool:
    """Whether both sides list the same keys in the same order (two runs of one schedule do)."""
    if len(a) != len(b) or len(a) == 0:
        return False
    for k in key:
        x, y = a[k], b[k]
        if x.dtype != y.dtype or x.hasnans or not bool((x.to_numpy() == y.to_numpy()).all()):
            return False
    return True


def _side_by_side(a: pd.DataFrame, b: pd.DataFrame, key: tuple[str, ...], columns: list[str]) -> pd.DataFrame:
    """The inner merge on `key` of two sides whose unique keys match row for row (`_same_keys`): the very frame
    the merge builds (its rows in the left's order), without hashing and joining the keys or copying the tables
    first (the gate pairs each comparison twice, and calibration judges hundreds)."""
    data = {k: a[k].array for k in key}
    data.update({f"{c}_a": a[c].array for c in columns})
    data.update({f"{c}_b": b[c].array for c in columns})
    return pd.DataFrame(data)
