"""A suite's real runs in the order they started: each run's start (UTC), the 1-minute load at the start and end of
each trial, and the other processes' CPU share per trial (from each manifest's `outcomes[].machine`), as the
measurement logs of the fidelity suites quote them. Reads files only.

    .venv/bin/python docs/plans/suite_run_loads.py RUNS_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(runs: Path) -> None:
    rows = []
    for manifest in runs.glob("*/manifest.json"):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        outcomes = data.get("outcomes") or []
        machines = [o.get("machine") or {} for o in outcomes]
        nan = float("nan")
        loads = [f"{m.get('load_avg_1m_start', nan):.2f}-{m.get('load_avg_1m', nan):.2f}" for m in machines]
        if len({o["engine"] for o in outcomes}) > 1:  # a fit run: both engines, one trial each
            loads = [f"{o['engine']} {load}" for o, load in zip(outcomes, loads, strict=True)]
        others = " ".join(f"{m.get('others_share', float('nan')):.3f}" for m in machines)
        busy = sum(bool(m.get("busy")) for m in machines)
        rows.append((str(data.get("started_at", "")), manifest.parent.name, ", ".join(loads), others, busy))
    for started, name, loads, others, busy in sorted(rows):  # ISO times of one zone sort as they ran
        stamp = started[11:19]
        print(f"{name:<28} {stamp} {loads} others {others}{f' BUSY {busy}' if busy else ''}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
