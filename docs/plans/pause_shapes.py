"""Issue 30: the steps after an idle pause, shape by shape (docs/measurements/2026-12-07-fidelity-v7-pauses.md).

Section 6 of docs/measurements/2026-12-07-fidelity-suite-v7.md found steps 8-31 after a pause slower than later
ones in the hol-blocking pairs, in ratios that mix step shapes. Here each step keeps its shape
(docs/plans/pricing_split.py's bins) and its measured milliseconds are compared within the shape:
  1. per common shape, the median measured ms by steps since the pause (0, 1-3, 4-7, 8-31, 32+), the fit runs
     pooled against each run, then the same by the length of the pause (<100 ms, 100-500 ms, 500+ ms);
  2. over all shapes, each step over its own run's steady (32+) median of its shape, by steps since the pause:
     how long until a shape reaches its steady time;
  3. the run's "speed" term (pricing_split: residual minus the fit runs' median residual of the shape, a share of
     busy time), then split into steps 0-31 and 32+, and again with every step 0-31 measured at its shape's steady
     (32+) median in the same run: how much of the term is the post-pause stretch;
  4. the steady steps (32+) against the fit runs' steady steps of the same shape (median of the per-step ratio
     to the fit runs' 32+ median; beside it the same ratio of the noise-free price, the shape's mix within its bin
     as the profile sees it), and the same per trial and per third of the trial's wall clock;
  5. the commonest shape (single-row decode below 256 keys, priced flat there) by its context in 64-key bins.
Reads files only.

    ENGINE=static|continuous .venv/bin/python docs/plans/pause_shapes.py PROFILE FIT_RUN[,FIT_RUN...] RUN [RUN ...]
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from docs.plans.cell_split import IDLE_S, since_idle, steps
from docs.plans.pricing_split import COLUMN, MIN_SHARED, label, shape
from engines.sim.fitted import load_profile
from harness.simulation import trace_steps

ENGINE = os.environ.get("ENGINE", "continuous")
SINCE = ((0, 0), (1, 3), (4, 7), (8, 31), (32, 10**9))
PAUSE = ((0.0, 0.1), (0.1, 0.5), (0.5, 1e9))  # seconds
SHAPES = int(os.environ.get("SHAPES", "8"))  # commonest shapes shown per run
MIN_CELL = 5  # steps before a cell's median is printed


def load(runs: list[Path], profile) -> dict[str, np.ndarray]:
    """Every step of the runs: shape, measured s, price s, steps since the pause, the pause's length, trial,
    and the step's position in its trial's wall clock (0-1)."""
    cols: dict[str, list] = {k: [] for k in ("shape", "ms", "price", "since", "pause", "trial", "pos", "ctx")}
    for run in runs:
        for t, path in enumerate(sorted((run / "steps").glob(f"{ENGINE}-t*.jsonl"))):
            rows, price = steps(path, profile)
            since = since_idle(rows)
            pause, length = 0.0, []
            for i, row in enumerate(rows):
                if since[i] == 0:
                    pause = row["t_start"] - rows[i - 1]["t_end"] if i else 1e9
                length.append(pause)
            t0, t1 = rows[0]["t_start"], rows[-1]["t_end"]
            features = trace_steps([path]).features
            cols["shape"] += [shape(f) for f in features]
            rows_in = np.maximum(1, features[:, COLUMN["decode_seqs"]] + features[:, COLUMN["held_rows"]])
            cols["ctx"] += list(features[:, COLUMN["decode_context"]] / rows_in)
            cols["ms"] += [1e3 * (r["t_end"] - r["t_start"]) for r in rows]
            cols["price"] += list(1e3 * price)
            cols["since"] += list(since)
            cols["pause"] += length
            cols["trial"] += [f"{run.name}:{t}"] * len(rows)
            cols["pos"] += [(r["t_start"] - t0) / (t1 - t0) for r in rows]
    out = {k: np.asarray(v) for k, v in cols.items() if k != "shape"}
    out["shape"] = cols["shape"]
    return out


def cell(values: np.ndarray) -> str:
    return f"{np.median(values):6.2f} ({values.size:4d})" if values.size >= MIN_CELL else f"{'-':>6} ({values.size:4d})"


def steady_of(d: dict[str, np.ndarray], column: str = "ms") -> dict[tuple, float]:
    """Per shape, the median measured ms (or price) of its steps 32+ since a pause (shapes with MIN_CELL of them)."""
    out = {}
    for key in set(d["shape"]):
        v = d[column][mask_of(d, key) & (d["since"] >= 32)]
        if v.size >= MIN_CELL:
            out[key] = float(np.median(v))
    return out


def mask_of(d: dict[str, np.ndarray], key: tuple) -> np.ndarray:
    return np.array([s == key for s in d["shape"]])


def by_shape(fit: dict[str, np.ndarray], name: str, d: dict[str, np.ndarray]) -> None:
    keys = [k for k, _ in Counter(d["shape"]).most_common(SHAPES)]
    print(f"{name}: median measured ms (steps) by steps since the pause: 0 | 1-3 | 4-7 | 8-31 | 32+")
    print("   then for steps 1-31, by the pause's length: <100 ms | 100-500 ms | 500+ ms")
    for key in keys:
        print(f"  {label(key)}")
        for who, src in (("fit", fit), ("run", d)):
            m = mask_of(src, key)
            since = " | ".join(cell(src["ms"][m & (src["since"] >= a) & (src["since"] <= b)]) for a, b in SINCE)
            post = m & (src["since"] >= 1) & (src["since"] <= 31)
            pause = " | ".join(cell(src["ms"][post & (src["pause"] >= a) & (src["pause"] < b)]) for a, b in PAUSE)
            print(f"    {who}: {since}  ||  {pause}")


def settle(name: str, d: dict[str, np.ndarray]) -> None:
    """Each step over its own run's steady median of its shape, by steps since the pause."""
    steady = steady_of(d)
    ratio = np.array([m / steady.get(s, np.nan) for s, m in zip(d["shape"], d["ms"], strict=True)])
    bins = [(k, k) for k in range(12)] + [(12, 15), (16, 23), (24, 31), (32, 63), (64, 10**9)]
    cells = []
    for a, b in bins:
        v = ratio[(d["since"] >= a) & (d["since"] <= b) & ~np.isnan(ratio)]
        cells.append(f"{a if a == b else f'{a}-{b}' if b < 10**9 else f'{a}+'}: {np.median(v):.3f} ({v.size})")
    print(
        f"{name}: step / its shape's steady (32+) median in the same run, by steps since the pause: " + " ".join(cells)
    )


def speed(fit: dict[str, np.ndarray], name: str, d: dict[str, np.ndarray]) -> None:
    """pricing_split's speed term, split by steps since the pause, and with the post-pause steps at steady time."""
    reference = {}
    for key in set(fit["shape"]):
        resid = (fit["price"] - fit["ms"])[mask_of(fit, key)]
        if resid.size >= MIN_SHARED:
            reference[key] = float(np.median(resid))
    steady = steady_of(d)
    busy = d["ms"].sum()
    ref = np.array([reference.get(s, np.nan) for s in d["shape"]])
    sampled = ~np.isnan(ref)
    term = np.where(sampled, d["price"] - d["ms"] - np.nan_to_num(ref), 0.0)
    post = d["since"] <= 31
    at_steady = np.array(
        [steady.get(s, m) if k <= 31 else m for s, m, k in zip(d["shape"], d["ms"], d["since"], strict=True)]
    )
    term2 = np.where(sampled, d["price"] - at_steady - np.nan_to_num(ref), 0.0)
    covered = post & sampled & np.array([s in steady for s in d["shape"]])
    print(
        f"{name}: speed {100 * term.sum() / busy:+.1f}% = steps 0-31 {100 * term[post].sum() / busy:+.1f}% "
        f"({post.sum()} steps) + steps 32+ {100 * term[~post].sum() / busy:+.1f}% ({(~post).sum()} steps); "
        f"steps 0-31 at their shape's steady time: speed {100 * term2.sum() / busy:+.1f}% "
        f"(re-timed {covered.sum()} of {(post & sampled).sum()} sampled post-pause steps; "
        f"busy {busy / 1e3:.3f} s -> {at_steady.sum() / 1e3:.3f} s)"
    )


def against_fit(fit: dict[str, np.ndarray], name: str, d: dict[str, np.ndarray]) -> None:
    """Steady steps over the fit runs' steady median of the shape; per trial and per third of the trial."""
    fit_steady, fit_price = steady_of(fit), steady_of(fit, "price")
    ratio = np.array([m / fit_steady.get(s, np.nan) for s, m in zip(d["shape"], d["ms"], strict=True)])
    priced = np.array([p / fit_price.get(s, np.nan) for s, p in zip(d["shape"], d["price"], strict=True)])
    ok = ~np.isnan(ratio)

    def med(m: np.ndarray) -> str:
        v = ratio[m & ok]
        return f"{np.median(v):.3f} (price {np.median(priced[m & ok]):.3f}, {v.size})" if v.size else "- (0)"

    st, post = d["since"] >= 32, d["since"] <= 31
    trials = " ".join(f"{t}: {med(st & (d['trial'] == t))}" for t in sorted(set(d["trial"])))
    thirds = " ".join(
        f"{i + 1}/3: {med(st & (d['pos'] >= i / 3) & (d['pos'] < (i + 1) / 3 + (i == 2)))}" for i in range(3)
    )
    print(
        f"{name}: step / fit runs' steady median of its shape: steps 32+ {med(st)}, steps 0-31 {med(post)}; "
        f"steps 32+ by trial {trials}; by third of the trial {thirds}"
    )


def context(fit: dict[str, np.ndarray], name: str, d: dict[str, np.ndarray]) -> None:
    """Single-row decode below 256 keys (the commonest shape, priced flat in context): median ms by context."""
    cells = []
    for who, src in (("fit", fit), (name, d)):
        m = mask_of(src, ("decode", 1, 0))
        for label_, part in (("1-31", (src["since"] >= 1) & (src["since"] <= 31)), ("32+", src["since"] >= 32)):
            row = [cell(src["ms"][m & part & (src["ctx"] >= a) & (src["ctx"] < a + 64)]) for a in (0, 64, 128, 192)]
            cells.append(f"  {who} steps {label_}: " + " | ".join(row))
    print(f"{name}: 1-row decode below 256 keys, median ms (steps) by keys 0-63 | 64-127 | 128-191 | 192-255")
    print("\n".join(cells))


def main(profile_path: Path, fit_runs: list[Path], runs: list[Path]) -> None:
    profile = load_profile(profile_path)
    print(f"engine {ENGINE}, idle pause > {1e3 * IDLE_S:g} ms")
    fit = load(fit_runs, profile)
    data = {run.name: load([run], profile) for run in runs}
    print("== 1. per shape ==")
    for name, d in data.items():
        by_shape(fit, name, d)
    print("== 2. until steady ==")
    settle("fit runs", fit)
    for name, d in data.items():
        settle(name, d)
    print("== 3. the speed term ==")
    for name, d in data.items():
        speed(fit, name, d)
    print("== 4. against the fit runs' steady steps ==")
    against_fit(fit, "fit runs", fit)
    for name, d in data.items():
        against_fit(fit, name, d)

    print("== 5. the commonest shape by its context ==")
    for name, d in data.items():
        context(fit, name, d)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2].split(",")], [Path(p) for p in sys.argv[3:]])
