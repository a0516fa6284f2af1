"""Medians and spreads of `vllm bench serve` result files from compare.sh, as a markdown table.

Usage: python summarize.py RESULTS_DIR   (files NAME-rN.json; warm-up files are ignored)
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

COLUMNS = (  # (heading, key in vllm bench serve's result JSON)
    ("output tok/s", "output_throughput"),
    ("TTFT p50 ms", "median_ttft_ms"),
    ("TTFT p99 ms", "p99_ttft_ms"),
    ("TPOT p50 ms", "median_tpot_ms"),
)


def main(folder: Path) -> None:
    runs: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(folder.glob("*-r*.json")):
        runs[path.stem.rsplit("-r", 1)[0]].append(json.loads(path.read_text()))
    print("| server | runs | " + " | ".join(h for h, _ in COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for name, results in runs.items():
        cells = []
        for _, key in COLUMNS:
            values = [r[key] for r in results]
            cells.append(f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})")
        print(f"| {name} | {len(results)} | " + " | ".join(cells) + " |")
    for name, results in runs.items():  # ratios within a round: the runs that were neighbours in time
        if name == "vllm" or "vllm" not in runs:
            continue
        pairs = zip(results, runs["vllm"], strict=False)
        ratios = [r["output_throughput"] / v["output_throughput"] for r, v in pairs]
        rounds = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"{name} / vllm output tok/s: median {statistics.median(ratios):.2f} (rounds: {rounds})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
