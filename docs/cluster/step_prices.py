"""Each run's engine steps against the profile's price of the same shapes (docs/cluster.md, "Where the twin's
shortfall goes"): the fit run, the in-process and direct calibration runs, and every run through the router.

    env PYTHONPATH=. .venv/bin/python docs/cluster/step_prices.py runs/real-router-3

Reads what docs/cluster/real_router.sh leaves in OUT: profile.json, fit/steps, calibration-inprocess/steps,
steps-r1.jsonl (replica 1's whole trace: its lines before the router runs are the direct run's) and
RUN/replicas/rN.steps.jsonl.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from engines.sim.fitted import load_profile
from engines.step_features import StepFeatures
from harness.simulation import trace_steps


def main(out: Path) -> None:
    profile = load_profile(out / "profile.json")
    routed = sorted(p.parent for p in out.glob("*/replicas"))
    sets = [
        ("fit run, in process", sorted((out / "fit" / "steps").glob("*.jsonl"))),
        ("calibration, in process", sorted((out / "calibration-inprocess" / "steps").glob("*.jsonl"))),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        whole = (out / "steps-r1.jsonl").read_text().splitlines()
        later = sum(len((run / "replicas" / "r1.steps.jsonl").read_text().splitlines()) for run in routed)
        direct = Path(tmp) / "direct.jsonl"
        direct.write_text("".join(line + "\n" for line in whole[: len(whole) - later]))
        sets.append(("calibration, one replica direct", [direct]))
        for run in routed:
            sets.append((f"{run.name}, through the router", sorted((run / "replicas").glob("*.steps.jsonl"))))
        for name, paths in sets:
            steps = trace_steps(paths) if paths else None
            if steps is None or not len(steps.duration_s):
                continue
            priced = np.array([profile.step_time(StepFeatures(*map(int, row))) for row in steps.features])
            print(
                f"{name}: {len(priced)} steps, mean {steps.duration_s.mean() * 1e3:.2f} ms against "
                f"{priced.mean() * 1e3:.2f} ms priced: x{steps.duration_s.sum() / priced.sum():.3f} "
                f"(median step x{np.median(steps.duration_s / priced):.3f})"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
