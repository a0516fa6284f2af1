"""How fast each fit run of a suite ran, against the fit runs pooled: the machine's drift within a session, read on
the fit runs themselves. For each engine's profile, each fit run's steps are priced by the profile (noise aside)
and its measured / priced ratio is divided by the pooled one; on the whole run and on a window of its first
requests (steps that start before WINDOW s: in step-profile-cover the first ten requests, decode at 1-4 rows, and
the next arrives at 29 s). Reads files only.

    .venv/bin/python docs/plans/fit_window_speed.py SUITE.toml RUNS_DIR [WINDOW]

A factor above 1: that fit run ran slower than the fit runs did together.
"""

from __future__ import annotations

import sys
from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite
from harness.simulation import trace_steps


def speeds(runs: list[Path], engine: str, profile_path: Path, before_s: float | None) -> list[tuple[float, float]]:
    """(measured s, priced s) of each run's steps of `engine` (those starting before `before_s`, if given)."""
    profile = load_profile(profile_path)
    out = []
    for run in runs:
        steps = trace_steps([run / "steps" / f"{engine}-t0.jsonl"], before_s)
        out.append((float(steps.duration_s.sum()), float(profile.price_steps(steps.features).sum())))
    return out


def main(suite_path: Path, runs: Path, window: float) -> None:
    suite = load_suite(suite_path)
    fits = [runs / name for name in suite.fit_names]
    print(f"{suite_path}: fit runs {', '.join(suite.fit_names)}; factor = (measured / priced) / pooled")
    for profile in suite.profiles.values():
        for label, before in (("whole run", None), (f"before {window:g} s", window)):
            got = speeds(fits, profile.engine, runs / profile.file, before)
            pooled = sum(m for m, _ in got) / sum(p for _, p in got)
            factors = ", ".join(f"{m / p / pooled:.3f}" for m, p in got)
            print(f"  {profile.engine:<10} {label:<14} {factors}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 29.0)
