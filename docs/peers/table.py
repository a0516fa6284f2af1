"""Prints the agreement table of docs/metrics.md ("Against other tools, measured") from one bench directory
written by docs/peers/run.sh: per round, AIPerf's own figures (profile_export_aiperf.json) beside batchmark's
run on the same server in the same minutes (metrics.json), and the median of the rounds' ratios.

    python docs/peers/table.py OUT_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

# (row, AIPerf tag and statistic, batchmark metric path, scale of AIPerf's value to batchmark's unit)
ROWS = (
    ("output tok/s", ("output_token_throughput", "avg"), ("throughput", "whole_run", "output_token_rate"), 1.0),
    ("requests/s", ("request_throughput", "avg"), ("throughput", "whole_run", "request_rate"), 1.0),
    ("TTFT p50 (ms)", ("time_to_first_token", "p50"), ("latency", "ttft_sent", "p50"), 1.0),
    ("TTFT p99 (ms)", ("time_to_first_token", "p99"), ("latency", "ttft_sent", "p99"), 1.0),
    ("TPOT p50 (ms)", ("inter_token_latency", "p50"), ("latency", "tpot", "p50"), 1.0),
    ("ITL p50 (ms)", ("inter_chunk_latency", "p50"), ("latency", "itl", "p50"), 1.0),
    ("E2E p50 (ms)", ("request_latency", "p50"), ("latency", "e2e_sent", "p50"), 1.0),
)


def ours(summary: dict, path: tuple[str, ...]) -> float | None:
    if path[0] == "throughput":
        return summary["throughput"][path[1]][path[2]]
    value = summary["latency"][path[1]]["percentiles"][path[2]]["value"]
    return None if value is None else value * 1e3


def main(out: Path) -> None:
    rounds = sorted(p for p in out.iterdir() if p.is_dir() and p.name.startswith("round"))
    ratios: dict[str, list[float]] = {row[0]: [] for row in ROWS}
    print("| round | metric | AIPerf 0.13.0 | batchmark http | AIPerf / batchmark |")
    print("|---|---|---|---|---|")
    for r in rounds:
        theirs_doc = json.loads((r / "aiperf" / "profile_export_aiperf.json").read_text())
        summary = json.loads((r / "batchmark" / "metrics.json").read_text())["engines"]["http"]
        for name, (tag, stat), path, scale in ROWS:
            theirs, mine = theirs_doc[tag][stat] * scale, ours(summary, path)
            ratio = theirs / mine if mine else None
            if ratio is not None:
                ratios[name].append(ratio)
            shown = "n/a" if ratio is None else f"{ratio:.3f}"
            print(f"| {r.name} | {name} | {theirs:.4g} | {'n/a' if mine is None else f'{mine:.4g}'} | {shown} |")
    print()
    print("| metric | median AIPerf / batchmark over the rounds |")
    print("|---|---|")
    for name, values in ratios.items():
        print(f"| {name} | {statistics.median(values):.3f} |" if values else f"| {name} | n/a |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
