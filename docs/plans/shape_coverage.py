"""Issue 30: how much of each trial's busy time a suite's profiles measured its speed on, and which step shapes the
fit runs left without a level (docs/measurements/2026-12-08-shape-coverage.md).

A trial's speed against the fit runs is measured only on step shapes with a fit-run level (at least MIN_STEPS
pooled fit-run steps of that shape: engines/sim/shape_speed.py). Reads a suite's measured runs directory (what
`--measure` wrote; it stays outside the repository: the traces are not kept in the fixtures), each run's
steps/ENGINE-t0.jsonl and the directory's profile-static.json / profile-continuous.json. Prints:
1. for every pair (runs PAIR, PAIR-2, PAIR-3): each trial's share of busy time in shapes with a level in its
   engine's profile, and the pair's five largest level-less shapes by pooled busy share;
2. for the fit runs (FIT, FIT-2, FIT-3), engine by engine: the pooled steps of every shape of the feature space
   the suites meet (decode:ROWS:BAND for rows 1..8 and bands 0..4; prefill:BITS:0 for 4..14 bits on the static
   engine, 4..10 on the continuous one), under MIN_STEPS or not, and every other shape the fit runs ran under
   MIN_STEPS.
With a third argument CANDIDATE_RUN_DIR, a last column: each trial's share of busy time in shapes that have a level
or that one candidate fit run ran at least 7 times (three such runs pooled would give them a level: a projection,
not a fit). With `--one RUN_DIR` instead: one candidate fit run's steps of every grid shape, engine by engine, and
whether each shape step-profile-cover-3 targets (`prefill:14:0` on the static engine, `decode:ROWS:BAND` for rows
3..8 and bands 1..4 on both) reached a third of MIN_STEPS (7 in each of three pooled runs: 21).
Reads files only.

    .venv/bin/python docs/plans/shape_coverage.py MEAS_RUNS_DIR FIT_RUN_NAME [CANDIDATE_RUN_DIR]
    e.g. MEAS_RUNS_DIR=/work/f30v12-meas/runs FIT_RUN_NAME=fit-cover2
    .venv/bin/python docs/plans/shape_coverage.py --one RUN_DIR
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

from engines.sim.fitted import load_profile
from engines.sim.shape_speed import MIN_STEPS, shape_keys
from harness.simulation import trace_steps

# the static engine pads a batch's prompts to its longest (up to 8 rows of a 2,048-token prompt: 15 bits, 14 shown);
# the continuous engine's prefill chunks are at most max_batched_tokens = 512 tokens (10 bits)
DECODE = [f"decode:{r}:{b}" for r in range(1, 9) for b in range(5)]
GRID = {
    "static": DECODE + [f"prefill:{bits}:0" for bits in range(4, 15)],
    "continuous": DECODE + [f"prefill:{bits}:0" for bits in range(4, 11)],
}


def _order(key: str) -> list[int]:
    kind, a, b = key.split(":")
    return [kind == "prefill", int(a), int(b)]


def _trace(run: Path) -> tuple[str, Path]:
    (path,) = sorted((run / "steps").glob("*-t0.jsonl"))
    return path.name.removesuffix("-t0.jsonl"), path


def _candidate(run: Path | None) -> dict[str, set[str]]:
    """The shapes one candidate fit run ran at least PER_RUN times, engine by engine (none without a run)."""
    if run is None:
        return {"static": set(), "continuous": set()}
    out = {}
    for engine in ("static", "continuous"):
        counts = Counter(shape_keys(trace_steps([run / "steps" / f"{engine}-t0.jsonl"]).features))
        out[engine] = {k for k, n in counts.items() if n >= PER_RUN}
    return out


def main(meas: Path, fit: str, candidate: Path | None = None) -> None:
    levels = {e: load_profile(meas / f"profile-{e}.json").fit["shape_levels"] for e in ("static", "continuous")}
    more = _candidate(candidate)
    pairs = sorted(p.name for p in meas.iterdir() if p.is_dir() and p.name[-2:] not in ("-2", "-3") and p.name != fit)
    extra = " | with the candidate's shapes" if candidate else ""
    head = "| pair | engine | trial 1 | trial 2 | trial 3 | largest level-less shapes (pooled busy share, steps)"
    print(f"{head}{extra} |")
    print("|---|---|---|---|---|---|" + ("---|" if candidate else ""))
    for pair in pairs:
        shares, busy, steps_of, total, projected = [], Counter(), Counter(), 0.0, []
        for run in (pair, f"{pair}-2", f"{pair}-3"):
            engine, path = _trace(meas / run)
            steps = trace_steps([path])
            keys = np.array(shape_keys(steps.features))
            known = np.array([k in levels[engine] for k in keys.tolist()], dtype=bool)
            shares.append(steps.duration_s[known].sum() / steps.duration_s.sum())
            grown = known | np.array([k in more[engine] for k in keys.tolist()], dtype=bool)
            projected.append(steps.duration_s[grown].sum() / steps.duration_s.sum())
            total += float(steps.duration_s.sum())
            for k, d in zip(keys.tolist(), steps.duration_s.tolist(), strict=True):
                if k not in levels[engine]:
                    busy[k] += d
                    steps_of[k] += 1
        top = ", ".join(f"{k} {v / total:.1%} ({steps_of[k]})" for k, v in busy.most_common(5)) or "-"
        grew = (" | " + " / ".join(f"{s:.1%}" for s in projected)) if candidate else ""
        print(f"| {pair} | {engine} | " + " | ".join(f"{s:.1%}" for s in shares) + f" | {top}{grew} |")
    for engine in ("static", "continuous"):
        counts: Counter[str] = Counter()
        per_run = []
        for run in (fit, f"{fit}-2", f"{fit}-3"):
            keys = shape_keys(trace_steps([meas / run / "steps" / f"{engine}-t0.jsonl"]).features)
            per_run.append(Counter(keys))
            counts.update(keys)
        print(f"\n{engine}: fit runs {fit}, -2, -3; {len(levels[engine])} shapes with a level in the profile")
        print("| shape | run 1 | run 2 | run 3 | pooled | level |\n|---|---|---|---|---|---|")
        shown = sorted(set(GRID[engine]) | {k for k, n in counts.items() if n < MIN_STEPS}, key=_order)
        for key in shown:
            mark = "yes" if counts[key] >= MIN_STEPS else "**no**"
            print(f"| {key} | " + " | ".join(str(c[key]) for c in per_run) + f" | {counts[key]} | {mark} |")


TARGETS = {f"decode:{r}:{b}" for r in range(3, 9) for b in range(1, 5)}
PER_RUN = -(-MIN_STEPS // 3)  # 7: three pooled runs of at least this many reach MIN_STEPS


def one(run: Path) -> None:
    for engine in ("static", "continuous"):
        steps = trace_steps([run / "steps" / f"{engine}-t0.jsonl"])
        counts = Counter(shape_keys(steps.features))
        targets = TARGETS | ({"prefill:14:0"} if engine == "static" else set())
        short = sorted((k for k in targets if counts[k] < PER_RUN), key=_order)
        print(f"\n{engine}: {len(steps.duration_s)} steps, busy {steps.duration_s.sum():.1f} s")
        print("| shape | steps | targeted | >= 7 |\n|---|---|---|---|")
        for key in sorted(set(GRID[engine]) | targets, key=_order):
            hit = "-" if key not in targets else ("yes" if counts[key] >= PER_RUN else "**no**")
            print(f"| {key} | {counts[key]} | {'yes' if key in targets else '-'} | {hit} |")
        print(f"targeted shapes under {PER_RUN}: {', '.join(short) or 'none'}")


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]) if len(sys.argv) > 3 else None)
