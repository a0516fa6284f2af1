"""Two `batchmark sim fidelity --json` tables of one suite side by side, per pair and metric: the first table's
error -> the second's (issue 30's context-binned decode log re-prices each suite's kept pairs on other profiles).

    .venv/bin/python docs/plans/compare_fidelity_tables.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def cell(before: dict, after: dict) -> str:
    if before["error"] is None:
        return f"{'-':>22s}"
    return f"{100 * before['error']:+8.1f} -> {100 * after['error']:+6.1f}%  "


def main(before_path: Path, after_path: Path) -> None:
    before, after = (json.loads(p.read_text()) for p in (before_path, after_path))
    metrics = [row["metric"] for row in before["pairs"][0]["rows"]]
    print(f"{'pair':24s}" + "".join(f"{m:>22s}" for m in metrics) + "   verdict")
    for a, b in zip(before["pairs"], after["pairs"], strict=True):
        cells = "".join(cell(x, y) for x, y in zip(a["rows"], b["rows"], strict=True))
        print(f"{a['pair']:24s}{cells} {a['verdict']} -> {b['verdict']}")
    pairs = [(before["summary"][m], after["summary"][m]) for m in metrics]
    medians = "".join(f"{100 * x['median_abs_error']:8.1f} -> {100 * y['median_abs_error']:6.1f}%  " for x, y in pairs)
    print(f"{'median |error|':24s}" + medians)
    print("verdicts:", before["verdicts"], "->", after["verdicts"])


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
