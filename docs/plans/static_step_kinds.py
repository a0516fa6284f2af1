"""Issue 30: which static step kinds make azure-code-static's busy time, and their price
(docs/measurements/2026-12-07-azure-code-static-price.md).

For each RUN's static step trace (and the fit runs'), priced by the suite's profile-static.json (noise aside), it
prints per step kind: steps, measured ms, priced ms, price error, the share of steps whose shape has a fit-run
level (`engines.sim.shape_speed`), and the error at the fit runs' levels (priced x level, over known shapes).
Kinds: prefill steps by prefill tokens (< 1,024, 1,024-2,047, >= 2,048); decode steps with held slots and
without, by keys a row (< 1,024, >= 1,024). Last, each run's `trial_speeds` speed and the largest prefill it has.
Reads files only.

    .venv/bin/python docs/plans/static_step_kinds.py MEAS_RUNS_DIR RUN [RUN ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from engines.sim.fitted import load_profile
from engines.sim.shape_speed import run_speed, shape_keys
from engines.step_features import FEATURE_NAMES
from harness.simulation import trace_steps

FITS = ("fit-step-profile-cover", "fit-step-profile-cover-2", "fit-step-profile-cover-3")
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


def kinds(f: np.ndarray) -> list[str]:
    out = []
    for row in f:
        prefill, decode, held, keys = (
            int(row[_F[n]]) for n in ("prefill_tokens", "decode_seqs", "held_rows", "decode_context")
        )
        if prefill:
            out.append(
                "prefill <1024" if prefill < 1024 else "prefill 1024-2047" if prefill < 2048 else "prefill >=2048"
            )
        else:
            per_row = keys // max(decode + held, 1)
            out.append(f"decode {'held' if held else 'no held'} {'<1024' if per_row < 1024 else '>=1024'}/row")
    return out


def table(name: str, path: Path, profile) -> None:
    steps = trace_steps([path])
    f, measured = steps.features, steps.duration_s
    priced = profile.price_steps(f)
    levels = profile.fit["shape_levels"]
    level = np.array([levels.get(k, np.nan) for k in shape_keys(f)])
    speed, covered = run_speed(f, measured, priced, levels)
    kind = np.array(kinds(f))
    print(
        f"\n{name}: {len(measured)} steps, busy {measured.sum() * 1e3:.0f} ms, priced {priced.sum() * 1e3:.0f} ms "
        f"({priced.sum() / measured.sum() - 1:+.1%}); trial speed {speed:+.1%} on {covered:.0%} of busy time; "
        f"largest prefill {int(f[:, _F['prefill_tokens']].max())} tokens"
    )
    print("| kind | steps | measured ms | share | priced ms | measured/priced-1 | known shape | at level |")
    print("|---|---|---|---|---|---|---|---|")
    for k in sorted(set(kind)):
        m = kind == k
        known = m & ~np.isnan(level)
        at = f"{measured[known].sum() / (priced[known] * level[known]).sum() - 1:+.1%}" if known.any() else "-"
        print(
            f"| {k} | {m.sum()} | {measured[m].sum() * 1e3:.0f} | {measured[m].sum() / measured.sum():.0%} | "
            f"{priced[m].sum() * 1e3:.0f} | {measured[m].sum() / priced[m].sum() - 1:+.1%} | "
            f"{known.sum()}/{m.sum()} | {at} |"
        )


def main(meas: Path, runs: list[str]) -> None:
    profile = load_profile(meas / "profile-static.json")
    for name in [*FITS, *runs]:
        table(name, meas / name / "steps" / "static-t0.jsonl", profile)


def prefill_steps(meas: Path, runs: list[str]) -> None:
    """Every prefill step of 1,024 tokens or more: its rows, tokens, pad rows, self pairs, measured and priced."""
    profile = load_profile(meas / "profile-static.json")
    print("\n| run | step | rows | prefill tokens | pad rows | self pairs (M) | measured ms | priced ms | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in [*FITS, *runs]:
        steps = trace_steps([meas / name / "steps" / "static-t0.jsonl"])
        f, measured = steps.features, steps.duration_s
        priced = profile.price_steps(f)
        for i in np.flatnonzero(f[:, _F["prefill_tokens"]] >= 1024):
            row = f[i]
            print(
                f"| {name} | {i} | {row[_F['prefill_chunks']]} | {row[_F['prefill_tokens']]} | "
                f"{row[_F['padded_rows']] - row[_F['held_rows']]} | {row[_F['prefill_self_pairs']] / 1e6:.2f} | "
                f"{measured[i] * 1e3:.0f} | {priced[i] * 1e3:.0f} | {priced[i] / measured[i] - 1:+.1%} |"
            )


def shape_counts(meas: Path, runs: list[str]) -> None:
    """The runs' prefill shapes (`shape_keys`): steps in the pooled fit runs, and whether the profile has a level."""
    levels = load_profile(meas / "profile-static.json").fit["shape_levels"]
    pooled = np.concatenate([trace_steps([meas / n / "steps" / "static-t0.jsonl"]).features for n in FITS])
    counts: dict[str, int] = {}
    for key in shape_keys(pooled):
        counts[key] = counts.get(key, 0) + 1
    wanted = sorted(
        {
            k
            for n in runs
            for k in shape_keys(trace_steps([meas / n / "steps" / "static-t0.jsonl"]).features)
            if k.startswith("prefill")
        }
    )
    for key in wanted:
        print(f"{key}: {counts.get(key, 0)} fit-run steps, level {levels.get(key, '-')}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
    prefill_steps(Path(sys.argv[1]), sys.argv[2:])
    shape_counts(Path(sys.argv[1]), sys.argv[2:])
