"""Gate calibration in minutes: pairs drawn from a committed real A/A run instead of run on the engine.

`batchmark calibrate` runs every pair on the engine (the gate's error rates at the number of trials its own
`trials_needed` asks for took 1 h 50 min to 3 h here). This draws them instead from a real A/A calibration pair
kept as a fixture: the same engine on both sides, on one schedule, its trials run back to back (ABBA). A drawn
trial is one of those real back-to-back trials, picked at random, its two sides in random order and each side's
requests resampled: the drift of a shared machine that the two sides of a real trial share stays shared, the
spread between real trials and within one stays in. An A/A pair is such draws as they are (any failing
verdict is a false alarm); a detection pair the same with the candidate's per-request TPOT scaled by a known
shift (1 + `slowdown`: the engine's per-step slowdown; any failing verdict is a detection). Every pair is
judged by the gate itself (`harness.gate.evaluate`) and counted by `harness.gate.calibration` (`noise`,
`trials_needed`, `summary`), the code `batchmark calibrate` uses.

What it cannot show: an effect other than the scaled TPOT (a real slowdown also moves TTFT and queueing), and
trials beyond the pool's (its real trials are reused: with 24 of them, drawn pairs are not independent runs).
The real engine variant stays (`tests/benchmarks/test_gate_calibration.py`, `BATCHMARK_REAL_CALIBRATION=1`).
"""

from __future__ import annotations

import csv
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.errors import HarnessInputError
from harness.gate import GateConfig, evaluate, sample_from_records
from harness.gate.calibration import CalibrationPlan, PairResult, rule_rows
from harness.metrics import load_records, records_frame

FIELDS = ("trial", "request_id", "t_scheduled", "ttft_s", "tpot_s", "output_tokens")


@dataclass(frozen=True)
class Pool:
    """The real back-to-back trials to draw from: per trial its two sides, each its requests' arrival, TTFT,
    TPOT and output tokens (the fixture's `trial` 2k and 2k + 1 are real trial k's two sides)."""

    trials: tuple[tuple[pd.DataFrame, pd.DataFrame], ...]
    source: str


def pool_from_calibration(pair_dir: Path) -> pd.DataFrame:
    """One A/A pair of a `batchmark calibrate --out` directory (`aa-00/t*/records.jsonl`) as pool rows: every
    trial of both sides (the same engine twice), each side's trials numbered apart."""
    rows = []
    runs = sorted(pair_dir.glob("t*/records.jsonl"), key=lambda p: int(p.parent.name[1:]))
    for k, path in enumerate(runs):
        records = load_records(path)
        ok = records[records["error_type"].isna()]
        for side, engine in enumerate(("baseline", "candidate")):
            mine = ok[ok["engine"] == engine]
            first = mine["t_first_token"] - mine["t_scheduled"]
            tpot = (mine["t_finish"] - mine["t_first_token"]) / (mine["output_tokens"] - 1)
            rows.append(
                pd.DataFrame(
                    {
                        "trial": 2 * k + side,
                        "request_id": mine["request_id"],
                        "t_scheduled": mine["t_scheduled"],
                        "ttft_s": first,
                        "tpot_s": tpot,
                        "output_tokens": mine["output_tokens"],
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def write_pool(frame: pd.DataFrame, path: Path) -> None:
    frame.loc[:, list(FIELDS)].to_csv(path, index=False, float_format="%.6g")


def load_pool(path: Path) -> Pool:
    """The fixture (CSV, FIELDS); a missing column or a bad value is one line naming the file and row."""
    try:
        with path.open(encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [f for f in FIELDS if f not in (reader.fieldnames or [])]
            if missing:
                raise HarnessInputError(f"{path}: no column {missing[0]!r} (expected {', '.join(FIELDS)})")
            rows = list(reader)
    except OSError as exc:
        raise HarnessInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        frame = pd.DataFrame(rows).astype(
            {"trial": int, "t_scheduled": float, "ttft_s": float, "tpot_s": float, "output_tokens": int}
        )
    except ValueError as exc:
        raise HarnessInputError(f"{path}: a value is not a number ({exc})") from None
    sides = {int(t): group.reset_index(drop=True) for t, group in frame.groupby("trial", sort=True)}
    pairs = tuple((sides[t], sides[t + 1]) for t in sorted(sides) if t % 2 == 0 and t + 1 in sides)
    if len(pairs) < 2 or len(pairs) * 2 != len(sides):
        raise HarnessInputError(
            f"{path}: trials must come in pairs 2k, 2k + 1 (two sides of one real trial), "
            f"at least two pairs; it has trials {sorted(sides)[:6]}..."
        )
    return Pool(pairs, str(path))


def _columns(side: pd.DataFrame) -> np.ndarray:
    return side[["t_scheduled", "ttft_s", "tpot_s", "output_tokens"]].to_numpy(dtype=np.float64)


def drawn_pair(kind: str, index: int, pool: Pool, plan: CalibrationPlan, config: GateConfig) -> PairResult:
    """One calibration pair drawn from `pool` (`kind` "aa" or "slowdown": the candidate's TPOT times
    1 + `plan.slowdown`), judged by the gate; seeded by `plan.seed`, the kind and `index`."""
    started = time.perf_counter()
    seed = plan.seed + index
    rng = np.random.default_rng([seed, 0 if kind == "aa" else 1])
    sides = [(_columns(a), _columns(b)) for a, b in pool.trials]
    parts: dict[str, list[np.ndarray]] = {"baseline": [], "candidate": []}
    for t in range(plan.trials):
        a, b = sides[int(rng.integers(len(sides)))]
        if rng.random() < 0.5:  # which real side is the baseline: the second run of a trial is not always it
            a, b = b, a
        for engine, side in (("baseline", a), ("candidate", b)):
            picked = side[rng.integers(len(side), size=len(side))]  # the side's requests, resampled
            parts[engine].append(np.column_stack([picked, np.arange(len(side)), np.full(len(side), t)]))
    scale = 1.0 + plan.slowdown if kind == "slowdown" else 1.0
    frames = [
        _records(np.vstack(parts["baseline"]), "baseline", 1.0),
        _records(np.vstack(parts["candidate"]), "candidate", scale),
    ]
    records = pd.concat(frames, ignore_index=True)
    source = f"{kind}-{index:02d} (drawn from {pool.source})"
    verdict = evaluate(
        config,
        sample_from_records(records, engine="baseline", source=source),
        sample_from_records(records, engine="candidate", source=source),
    )
    return PairResult(
        kind, index, seed, verdict.regressed, time.perf_counter() - started, os.getloadavg()[0], rule_rows(verdict)
    )


def _records(rows: np.ndarray, engine: str, scale: float) -> pd.DataFrame:
    """Drawn requests (arrival, TTFT, TPOT, tokens, position, trial per row) as a records table; TPOT times
    `scale`, each token at the request's TPOT after the previous one."""
    sched, ttft, tpot, n, position, trial = rows.T
    n, tpot, first = n.astype(np.int64), tpot * scale, sched + ttft
    times = [(f + np.arange(k) * g).tolist() for f, k, g in zip(first, n, tpot, strict=True)]
    return records_frame(
        [
            {
                "request_id": f"r{int(i)}",
                "engine": engine,
                "tenant": "default",
                "priority": 0,
                "max_tokens": int(k),
                "ignore_eos": True,
                "prompt_tokens": 1,
                "t_scheduled": float(s),
                "t_sent": float(s),
                "t_admitted": float(s),
                "t_first_token": float(f),
                "t_finish": tt[-1],
                "token_times": tt,
                "output_tokens": int(k),
                "engine_prompt_tokens": 1,
                "engine_output_tokens": int(k),
                "finish_reason": "length",
                "error_type": None,
                "error_message": None,
                "preemptions": 0,
                "trial": int(t),
            }
            for i, s, f, k, tt, t in zip(position, sched, first, n, times, trial, strict=True)
        ]
    )


def drawn_pairs(pool: Pool, plan: CalibrationPlan, config: GateConfig) -> list[PairResult]:
    """`plan.pairs` pairs of each kind, alternating as `batchmark calibrate` runs them."""
    return [drawn_pair(kind, i, pool, plan, config) for i in range(plan.pairs) for kind in ("aa", "slowdown")]
