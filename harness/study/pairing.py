"""Whether an arm's trial replayed its baseline's schedule, by the judge's one pairing decision
(harness.judge.pairing) on the two units' records: the study takes an arm's change trial by trial only
where that trial pairs. An arm that changes the load or drops requests replays another workload, so its
change is the ratio of the two sides' means instead, with no per-trial interval.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.judge.pairing import Side, decide_pairing, follows_engine


def mark_pairings(results: list[dict[str, Any]]) -> None:
    """Add `pairing` (harness.judge.pairing.Pairing.to_json) to each arm's result whose records and its
    baseline's are at hand; results without records (an empty slice) stay as they are."""
    base = {(r["slice"], r["trial"]): r for r in results if r["arm"] == "baseline"}
    for result in results:
        other = base.get((result["slice"], result["trial"]))
        if result["arm"] == "baseline" or other is None:
            continue
        sides = _side(other), _side(result)
        if sides[0] is not None and sides[1] is not None:
            result["pairing"] = decide_pairing(sides[0], sides[1]).to_json()


def _side(result: dict[str, Any]) -> Side | None:
    from harness.metrics import load_records

    run = Path(str(result.get("run_dir") or ""))
    if not (run / "records.jsonl").is_file():
        return None
    records = load_records(run / "records.jsonl")
    if records.empty:
        return None
    manifest_path = run / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    fingerprint = (manifest.get("workload") or {}).get("fingerprint")
    return Side(records, follows_engine(records, manifest), fingerprint)
