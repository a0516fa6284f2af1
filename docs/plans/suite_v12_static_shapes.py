"""Issue 30: the twelfth suite's azure-code-static, shape by shape (docs/measurements/2026-12-08-fidelity-suite-v12.md).

Reads the suite's measured runs with their step traces (the directory `--measure` wrote; the traces are not kept in
the fixture) and the suite's profile-static.json. Prints:
1. each static fit run's steps of the shapes step-profile-cover-2 was added for (prefill:12:0, prefill:13:0), pooled;
2. the level check: every prefill shape's median measured / priced over the pooled fit runs (under MIN_STEPS too),
   its level recomputed from them (`engines.sim.shape_speed.shape_levels`) and the level the profile stores, and
   how far apart the recomputed and the stored levels are over every shape;
3. for each azure-code-static trial: its busy time by shape (steps, share, measured / priced - 1, the shape's
   level, measured / (priced x level) - 1), its trial speed and the share of busy time it was measured on.
Reads files only.

    .venv/bin/python docs/plans/suite_v12_static_shapes.py MEAS_RUNS_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from engines.sim.fitted import load_profile
from engines.sim.shape_speed import run_speed, shape_keys, shape_levels
from harness.simulation import trace_steps

FITS = ("fit-cover2", "fit-cover2-2", "fit-cover2-3")
TRIALS = ("azure-code-static", "azure-code-static-2", "azure-code-static-3")
NEW = ("prefill:12:0", "prefill:13:0")


def main(meas: Path) -> None:
    profile = load_profile(meas / "profile-static.json")
    stored = profile.fit["shape_levels"]
    feats, measured, priced = [], [], []
    print("| fit run | " + " | ".join(NEW) + " |\n|---|---|---|")
    for name in FITS:
        steps = trace_steps([meas / name / "steps" / "static-t0.jsonl"])
        keys = shape_keys(steps.features)
        print(f"| {name} | " + " | ".join(str(keys.count(k)) for k in NEW) + " |")
        feats.append(steps.features)
        measured.append(steps.duration_s)
        priced.append(profile.price_steps(steps.features))
    f, m, p = np.concatenate(feats), np.concatenate(measured), np.concatenate(priced)
    keys = shape_keys(f)
    print("| pooled | " + " | ".join(str(keys.count(k)) for k in NEW) + " |")
    recomputed = shape_levels(f, m, p)
    ratio = m / p
    print("\n| prefill shape | pooled fit steps | median measured/priced | level recomputed | level stored |")
    print("|---|---|---|---|---|")
    for key in sorted({k for k in keys if k.startswith("prefill")}, key=lambda k: [int(x) for x in k.split(":")[1:]]):
        got, kept = recomputed.get(key), stored.get(key)
        print(
            f"| {key} | {keys.count(key)} | {np.median(ratio[np.array(keys) == key]):.3f} | "
            f"{'-' if got is None else f'{got:.3f}'} | "
            f"{'-' if kept is None else f'{kept:.3f}'} |"
        )
    worst = max(abs(recomputed[k] - stored[k]) for k in stored)
    same = set(recomputed) == set(stored)
    print(f"\nlevels recomputed: {len(recomputed)}, stored: {len(stored)}, the same shapes: {same}")
    print(f"largest |recomputed - stored| over all shapes: {worst:.2e}")
    for name in TRIALS:
        steps = trace_steps([meas / name / "steps" / "static-t0.jsonl"])
        tf, tm = steps.features, steps.duration_s
        tp = profile.price_steps(tf)
        speed, covered = run_speed(tf, tm, tp, stored)
        tkeys = np.array(shape_keys(tf))
        print(
            f"\n{name}: {len(tm)} steps, busy {tm.sum() * 1e3:.0f} ms, priced {tp.sum() * 1e3:.0f} ms; "
            f"trial speed {speed:+.1%} measured on {covered:.1%} of busy time"
        )
        print("| shape | steps | share of busy | measured/priced - 1 | level | measured/(priced x level) - 1 |")
        print("|---|---|---|---|---|---|")
        for key in sorted(set(tkeys.tolist()), key=lambda k: -tm[tkeys == k].sum()):
            sel = tkeys == key
            level = stored.get(key)
            at = "-" if level is None else f"{tm[sel].sum() / (tp[sel].sum() * level) - 1:+.1%}"
            print(
                f"| {key} | {sel.sum()} | {tm[sel].sum() / tm.sum():.1%} | {tm[sel].sum() / tp[sel].sum() - 1:+.1%} | "
                f"{'-' if level is None else f'{level:.3f}'} | {at} |"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
