"""docs/study.md's acceptance table from a `batchmark study docs/plans/noisy-neighbour-2x.toml` directory: the
light tenants' p99 TTFT relative to their run alone (the `light-alone` arm, same slice and trial), the mean over
trials with a 95% bootstrap interval over trials (10,000 resamples, seed 0), the tuning slice's mean p99 TTFT,
and the share of requests shed on the tuning slice (of the light tenants' in brackets).

    .venv/bin/python docs/plans/noisy_neighbour_table.py STUDY_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from harness.metrics import load_records

KEY = "ttft.p99[light-*]"
SLICES = ("tuning", "held_out")


def table(root: Path) -> list[str]:
    study = json.loads((root / "study.json").read_text())
    units = {(u["arm"], u["slice"], u["trial"]): u for u in study["units"]}
    trials = sorted({t for _, _, t in units})
    rng = np.random.default_rng(0)
    head = "| arm | tuning slice | held-out slice | light p99 TTFT (tuning) | requests shed (light) |"
    lines = [head, "|---|---|---|---|---|"]
    for arm in (a["name"] for a in study["arms"]):
        cells = []
        for part in SLICES:
            ratios = np.array(
                [
                    units[(arm, part, t)]["metrics"][KEY] / units[("light-alone", part, t)]["metrics"][KEY]
                    for t in trials
                ]
            )
            low, high = np.percentile(rng.choice(ratios, (10_000, len(ratios))).mean(axis=1), [2.5, 97.5])
            cells.append(f"**{ratios.mean():,.0f}x** [{low:,.0f}, {high:,.0f}]")
        p99 = np.mean([units[(arm, "tuning", t)]["metrics"][KEY] for t in trials])
        shed = light_shed = requests = light_requests = 0
        for t in trials:
            records = load_records(Path(units[(arm, "tuning", t)]["run_dir"]) / "records.jsonl")
            refused = (records["error_type"] == "slo_shed").to_numpy()
            light = records["tenant"].str.startswith("light").to_numpy()
            shed, light_shed = shed + refused.sum(), light_shed + (refused & light).sum()
            requests, light_requests = requests + len(records), light_requests + light.sum()
        lines.append(
            f"| {arm} | {cells[0]} | {cells[1]} | {p99:.2f} s | "
            f"{shed / requests:.0%} ({light_shed / light_requests:.0%}) |"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(table(Path(sys.argv[1]))))
