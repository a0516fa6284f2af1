"""Issue 30: why the thirteenth suite's continuous profile prices dispatch at 54 ms (the twelfth's: 0.8 ms).

`harness/simulation.py` `idle_arrival_waits` takes, for every request that reached the continuous engine while no
step was in flight, the wait from its scheduled arrival to the start of the step that admitted it; the fit's
`dispatch_s` is the median of those waits over the pooled fit runs, and the twin adds it to every such arrival.
Reads a suite's measured runs directory (what `--measure` wrote; it stays outside the repository: the fit runs'
records and step traces are not kept in the fixtures) and prints, per fit run set:
1. the pooled idle arrivals, their median wait (equal to profile-continuous.json's `dispatch_s`, checked);
2. by tenant (step-profile-cover-3's per-burst tenants folded): idle arrivals, median and largest wait;
3. the same median counting only the arrivals that find no other request arrived and not yet admitted (the first of
   a simultaneous burst): the estimator the finding proposes for a later registered suite (not made here).
Reads files only.

    .venv/bin/python docs/plans/suite_v13_dispatch.py MEAS_RUNS_DIR FIT_RUN_NAME [MEAS_RUNS_DIR FIT_RUN_NAME ...]
    e.g. /work/f30v12-meas/runs fit-cover2 /work/f30v13-meas/runs fit-cover3
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ENGINE = "continuous"


def group(tenant: str) -> str:
    """A preset's tenant, with step-profile-cover-3's per-burst tenants folded: its decode grid
    (cover-rowsR-bandB-K, the K-th of a burst of R) and its padded prefills' short prompts (cover-padN-short-K)."""
    tenant = re.sub(r"^cover-rows\d+-band\d+-\d+$", "cover-rowsR-bandB-K (decode grid bursts)", tenant)
    return re.sub(r"^(cover-pad\d+-short)-\d+$", r"\1-K", tenant)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def idle_arrivals(run_dir: Path) -> list[tuple[str, float, bool]]:
    """(tenant, wait, alone) for each idle arrival of the continuous engine, as `idle_arrival_waits` counts them;
    alone: no other request had arrived before it (or at the same instant, earlier in the trace) unadmitted."""
    records = [r for r in read_jsonl(run_dir / "records.jsonl") if r.get("engine") == ENGINE]
    out = []
    for path in sorted((run_dir / "steps").glob(f"{ENGINE}-t*.jsonl")):
        suffix = path.stem.rsplit("-t", 1)[1]
        if not suffix.isdigit():
            continue
        trial = int(suffix)
        steps = read_jsonl(path)
        spans = np.array(sorted((float(r["t_start"]), float(r["t_end"])) for r in steps)).reshape(-1, 2)
        mine = [r for r in records if r.get("trial", 0) == trial]
        timed = [
            (float(r["t_scheduled"]), float(r["t_admitted"]), k)
            for k, r in enumerate(mine)
            if isinstance(r.get("t_admitted"), int | float) and isinstance(r.get("t_scheduled"), int | float)
        ]
        for k, r in enumerate(mine):
            admitted, at = r.get("t_admitted"), r.get("t_scheduled")
            if not isinstance(admitted, int | float) or not isinstance(at, int | float):
                continue
            i = int(np.searchsorted(spans[:, 0], at)) - 1
            if i < 0 or spans[i, 1] <= at:
                waiting = any((s < at or (s == at and j < k)) and a > at for s, a, j in timed)
                out.append((str(r.get("tenant")), max(0.0, float(admitted) - at), not waiting))
    return out


def report(meas: Path, fit: str) -> None:
    runs = [meas / fit, meas / f"{fit}-2", meas / f"{fit}-3"]
    arrivals = [a for d in runs for a in idle_arrivals(d)]
    waits = [w for _, w, _ in arrivals]
    profile = json.loads((meas / "profile-continuous.json").read_text())
    median = float(np.median(waits))
    print(f"{meas} ({fit}, -2, -3): {len(waits)} idle arrivals, median wait {median * 1e3:.2f} ms", end="")
    counted = profile["fit"].get("idle_arrivals")
    print(f" (profile dispatch_s {profile['dispatch_s'] * 1e3:.2f} ms, idle_arrivals {counted})")
    assert abs(median - profile["dispatch_s"]) < 1e-9, "not the fit's estimator"
    by: dict[str, list[float]] = defaultdict(list)
    for tenant, w, _ in arrivals:
        by[group(tenant)].append(w)
    for tenant, ws in sorted(by.items(), key=lambda kv: -len(kv[1])):
        share = len(ws) / len(waits)
        print(
            f"  {tenant:<28} {len(ws):>4} ({share:4.0%})  "
            f"median {np.median(ws) * 1e3:8.2f} ms  max {max(ws) * 1e3:8.1f} ms"
        )
    alone = [w for _, w, a in arrivals if a]
    print(f"  first of a burst / nothing waiting: {len(alone)} arrivals, median {np.median(alone) * 1e3:.2f} ms")


if __name__ == "__main__":
    args = sys.argv[1:]
    for m, f in zip(args[::2], args[1::2], strict=True):
        report(Path(m), f)
