"""Which early warning fires first on each hard preset (docs/study.md): each preset replayed on the
simulator (Llama-3.1-8B, one H100, continuous, fcfs) at twice the throughput it sustains offline.

    .venv/bin/python docs/plans/presets_warnings.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli import main

PRESETS = {  # preset -> extra engine options (kv-pressure: a pool small enough for the preset to press on)
    "noisy-neighbour": "",
    "hol-blocking": "",
    "burst": "",
    "prefill-storm": "",
    "kv-pressure": ",kv_blocks=1500",
}


def run(out: Path, *argv: str) -> dict:
    assert main(["run", "--out", str(out), "--no-report", "--no-progress", "--slo-ttft-ms", "2000", *argv]) == 0
    return json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]


def main_(root: Path) -> None:
    rows = []
    for preset, extra in PRESETS.items():
        engine = f"sim:label=fcfs,calibration=none{extra}"  # the plain roofline the recorded table used
        offline = run(root / f"{preset}-offline", "--workload", preset, "--scenario", "offline", "--engine", engine)
        capacity = offline["throughput"]["whole_run"]["request_rate"]
        summary = run(root / preset, "--workload", preset, "--rate", f"{2 * capacity:.3f}", "--engine", engine)
        w = summary["warnings"]
        fired = {k: (v["first_fire_s"], v["lead_s"]) for k, v in w["signals"].items() if v["first_fire_s"] is not None}
        rows.append((preset, capacity, w["slo_violation_onset_s"], w["earliest"], fired))
    for preset, capacity, onset, earliest, fired in rows:
        shown = ", ".join(
            f"{k} {t:.1f} s (lead {lead:+.1f} s)" if lead is not None else f"{k} {t:.1f} s"
            for k, (t, lead) in sorted(fired.items(), key=lambda kv: kv[1][0])
        )
        onset_text = "none" if onset is None else f"{onset:.1f} s"
        print(
            f"{preset}: capacity {capacity:.2f} req/s, run at {2 * capacity:.2f}; onset {onset_text}; "
            f"earliest {earliest}; {shown or 'nothing fired'}"
        )


if __name__ == "__main__":
    main_(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/presets-warnings"))
