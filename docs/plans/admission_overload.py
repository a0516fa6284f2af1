"""The recovery controls under overload on both cost models (docs/study.md, "Recovery controls"): noisy-neighbour
on one simulated H100 (Llama-3.1-8B, 32 slots), its capacity measured offline on each cost model, then 20 s at
twice that capacity with each guard arm, and fair + shed at three admission targets. Virtual time: the numbers
do not depend on the machine.

    .venv/bin/python docs/plans/admission_overload.py [OUT_DIR]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

from harness.cli import main
from harness.metrics import SLO, load_records, request_latencies, slo_table

COST_MODELS = {"plain roofline (calibration=none)": "calibration=none,", "calibrated default": ""}
ARMS = {
    "fcfs": "",
    "fair": "policy=fair",
    "fair + shed": "policy=fair,admission=shed",
    "fcfs + shed": "admission=shed",
    "fcfs + fallback=fair": "fallback=fair,fallback_hold_s=1",
    "fair + shed, target 1 s": "policy=fair,admission=shed,admission_slo_ms=1000",
    "fair + shed, target 2 s": "policy=fair,admission=shed,admission_slo_ms=2000",
}


def run(out: Path, *argv: str) -> Path:
    shutil.rmtree(out, ignore_errors=True)  # a rerun replaces this script's own run directories, nothing else
    assert main(["run", "--out", str(out), "--no-report", "--no-progress", "--slo-ttft-ms", "2000", *argv]) == 0
    return out


def capacity(out: Path, model: str) -> float:
    """Requests per second noisy-neighbour completes offline (all at once, the slots always full)."""
    run(out, "--workload", "noisy-neighbour", "--scenario", "offline", "--engine", f"sim:{model}label=offline")
    summary = json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]
    return float(summary["throughput"]["whole_run"]["request_rate"])


def _slug(label: str) -> str:
    return label.replace(" ", "").replace(",", "-")


def p99(values: np.ndarray) -> float:
    return float(np.percentile(values, 99)) if len(values) else float("nan")


def main_(root: Path) -> None:
    for name, model in COST_MODELS.items():
        slug = "plain" if model else "calibrated"
        cap = capacity(root / f"{slug}-offline", model)
        rate = f"{2 * cap:.2f}"
        argv = ["--workload", "noisy-neighbour", "--rate", rate, "--duration", "20"]
        for label, arm in ARMS.items():
            argv += ["--engine", f"sim:{model}{arm + ',' if arm else ''}label={_slug(label)}"]
        records = load_records(run(root / slug, *argv) / "records.jsonl")
        print(f"\n{name}: capacity {cap:.2f} req/s offline, run at {rate} req/s for 20 s, SLO 2 s")
        print("| arm | admitted p99 TTFT | light p99 TTFT | light SLO attainment | shed (light) |")
        print("|---|---|---|---|---|")
        for label in ARMS:
            mine = records[records["engine"] == _slug(label)]
            served = request_latencies(mine)
            light = mine["tenant"].str.startswith("light").to_numpy()
            meets = slo_table(served, SLO(ttft_s=2.0, tpot_s=0.2))["meets_slo"].to_numpy()  # as the tests judge it
            ttft = served["ttft"].to_numpy()
            shed = (mine["error_type"] == "slo_shed").to_numpy()
            print(
                f"| {label} | {p99(ttft[~np.isnan(ttft)]):.2f} s | {p99(ttft[light & ~np.isnan(ttft)]):.2f} s | "
                f"{meets[light].mean():.0%} | {shed.mean():.0%} ({shed[light].mean():.0%}) |"
            )


if __name__ == "__main__":
    main_(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/admission-overload"))
