"""Issue 30, exploratory: how a pair's twin moves with the price of its steps. For each round of an interleaved
suite's pair (RUNS/PAIR, PAIR-2, PAIR-3, each with its speeds.json), the real TTFT and TPOT p50 beside the twins'
(five seeds, their median) with every step's price x 0.8, 0.9, 1.0, 1.1 and 1.2 (the sim option `step_scale`).
A pair whose twin jumps between neighbouring scales sits on a tipping point. Reads files only.

    .venv/bin/python docs/plans/twin_scale_sweep.py RUNS PAIR PROFILE_FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli.sim import simulate_twin
from harness.metrics.simulation import fidelity_rows
from harness.simulation import run_engines

SCALES = (0.8, 0.9, 1.0, 1.1, 1.2)


def main(runs: Path, pair: str, profile: Path) -> None:
    for d in [runs / pair, runs / f"{pair}-2", runs / f"{pair}-3"]:
        engine = next(e for e in run_engines(d) if e.get("kind") in ("static", "continuous"))
        real = json.loads((d / "metrics.json").read_text())["engines"][engine["name"]]
        speed = json.loads((d / "speeds.json").read_text())["speeds"][0]
        cells = []
        for scale in SCALES:
            twins = [simulate_twin(d, engine, profile, seed=s, headline=True, step_scale=scale) for s in range(5)]
            rows = {r["metric"]: r for r in fidelity_rows(real, *twins)}
            ttft, tpot = rows["TTFT p50"]["simulated"], rows["TPOT p50"]["simulated"]
            cells.append(f"x{scale}: TTFT p50 {ttft:.3g} s, TPOT p50 {tpot * 1e3:.3g} ms")
        rows = {r["metric"]: r for r in fidelity_rows(real)}
        ttft, tpot = rows["TTFT p50"]["real"], rows["TPOT p50"]["real"]
        print(
            f"{d.name}: speed {speed:+.3f}, real TTFT p50 {ttft:.3g} s, TPOT p50 {tpot * 1e3:.3g} ms | twins "
            + "; ".join(cells)
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[1]) / sys.argv[3])
