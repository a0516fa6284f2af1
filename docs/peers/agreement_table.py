"""Prints the agreement table of docs/metrics.md ("Against other tools, measured") from one bench directory written
by docs/peers/agreement.sh (protocol: docs/peers/agreement-protocol.md).

Per pair (one round, one peer): the peer's own figures, read from its file through `batchmark import`
(`peer-imported/metrics.json`, `imported`), beside batchmark's own run on the same server inside the same lock
(`batchmark/metrics.json`), and their ratio; where the peer's file holds per-request data, also batchmark's
definitions recomputed from the peer's timings (the import's summary) over batchmark's. Then per peer and metric
the median and range of the three pairs' ratios and the protocol's verdict.

    python docs/peers/agreement_table.py OUT_DIR
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

PEERS = {
    "vllm": "vLLM bench 0.32.0",
    "guidellm": "GuideLLM 0.8.1",
    "aiperf": "AIPerf 0.13.0",
    "inference_perf": "inference-perf 0.7.0",
}
# (row, batchmark's name, where: "rate", a percentile label, or "count"; the target (share), None: not judged)
ROWS = (
    ("output tok/s", "output_token_rate", "rate", 0.03),
    ("requests/s", "request_rate", "rate", 0.03),
    ("output tokens", "output_tokens", "count", 0.03),
    ("TTFT p50 (ms)", "ttft_sent", "p50", 0.10),
    ("TTFT p99 (ms)", "ttft_sent", "p99", None),
    ("TPOT p50 (ms)", "tpot", "p50", 0.10),
    ("E2E p50 (ms)", "e2e_sent", "p50", 0.10),
    # added after the protocol was fixed, not judged: in a closed loop of 16 the mean E2E is 16 / request rate
    # (Little's law) whatever the load's shape, while the medians follow the shape (how the sends bunch)
    ("TTFT mean (ms)", "ttft_sent", "mean", None),
    ("E2E mean (ms)", "e2e_sent", "mean", None),
)
# Under the Poisson load (agreement-protocol.md, "A Poisson rate") only vLLM rescales its gaps to the rate as
# batchmark does; the others' offered rate is a random draw with a 6% spread, so their rates are not judged.
RESCALING_PEERS = ("vllm",)
RATE_ROWS = ("output tok/s", "requests/s")
COHORT_GAP_S = 0.005  # sends closer than this to the previous send count as one cohort


def from_summary(summary: dict[str, Any], name: str, where: str) -> float | None:
    """A figure of a batchmark summary (its own run, or an import's recomputation), in ms for latencies."""
    if where == "rate":
        return summary["throughput"]["whole_run"][name]
    if where == "count":
        tokens = summary["requests"].get("output_tokens")
        return tokens.get("total") if isinstance(tokens, dict) else tokens
    entry = summary["latency"][name]
    value = entry["mean"] if where == "mean" else entry["percentiles"][where]["value"]
    return None if value is None else value * 1e3


def sends_of(pair_dir: Path, who: str) -> list[float]:
    """Send times of one side of a pair: from batchmark's records (its own run's, or the import's rebuilt from the
    peer's per-request data), else inference-perf's per-request lifecycle file (`report.request_lifecycle`)."""
    path = pair_dir / who / "records.jsonl"  # an import of aggregates writes it empty
    lines = path.read_text().splitlines() if path.exists() else []
    if any(line.strip() for line in lines):
        return [json.loads(line)["t_sent"] for line in lines if line.strip()]
    lifecycle = pair_dir / "inference-perf" / "per_request_lifecycle_metrics.json"
    if who == "peer-imported" and lifecycle.exists():
        return [r["start_time"] for r in json.loads(lifecycle.read_text())]
    return []


def cohort(sends: list[float]) -> float | None:
    """Mean number of requests per cohort of sends (each closer than COHORT_GAP_S to the previous one): 16 when
    a closed loop of 16 moves in lockstep, 1 when every send comes alone. None without per-request times."""
    sends = sorted(sends)
    if not sends:
        return None
    groups = 1 + sum(1 for a, b in itertools.pairwise(sends) if b - a >= COHORT_GAP_S)
    return len(sends) / groups


def from_reported(reported: dict[str, Any], name: str, where: str) -> float | None:
    """The peer's own figure, as its file states it (the import's `reported`), in ms for latencies."""
    if where == "count":  # an aggregate file gives the mean output length and the request count
        length, total = reported.get("output_tokens"), reported.get("requests")
        return length["mean"] * total["mean"] if length and total else None
    entry = reported.get(name)
    if entry is None:
        return None
    if where == "rate":
        return entry["mean"]
    value = entry["mean"] if where == "mean" else entry["percentiles"].get(where)
    return None if value is None else value * 1e3


def compared(
    reported: dict[str, Any], recomputed: dict | None, name: str, where: str, mine: float | None
) -> tuple[float | None, float | None, float | None]:
    """(the peer's own figure, it over batchmark's `mine`, the peer's records under batchmark's definitions over
    `mine`) for one row."""
    theirs = from_reported(reported, name, where)
    if theirs is None and where == "count" and recomputed:  # the peer's per-request counts, summed
        theirs = from_summary(recomputed, name, where)
    ratio = theirs / mine if theirs is not None and mine else None
    re = from_summary(recomputed, name, where) if recomputed else None
    return theirs, ratio, re / mine if re is not None and mine else None


def verdict(ratios: list[float], target: float | None) -> str:
    if target is None:
        return "not judged"
    if len(ratios) < 3:
        return "cannot tell (fewer than 3 pairs)"
    if all(abs(r - 1) <= target for r in ratios):
        return "holds"
    if all(r > 1 + target for r in ratios) or all(r < 1 - target for r in ratios):
        return "does not hold"
    return f"cannot tell (range {min(ratios):.3f}-{max(ratios):.3f})"


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def pair(directory: Path) -> tuple[dict, dict, dict | None] | None:
    """(peer's reported figures, batchmark's summary, the import's recomputed summary or None) of one pair."""
    imported, ours = directory / "peer-imported" / "metrics.json", directory / "batchmark" / "metrics.json"
    if not imported.exists() or not ours.exists():
        return None
    theirs = json.loads(imported.read_text())
    label = next(iter(theirs["imported"]))
    block = theirs["imported"][label]
    recomputed = theirs["engines"][label] if block["per_request"] else None
    return block["reported"], json.loads(ours.read_text())["engines"]["http"], recomputed


def target_of(row: str, target: float | None, peer: str, load: str) -> float | None:
    """The row's target for `peer` under the bench's load (None: reported, not judged)."""
    return None if load == "poisson" and row in RATE_ROWS and peer not in RESCALING_PEERS else target


def main(out: Path) -> None:
    load_file = out / "load.txt"  # written by agreement.sh: "LOAD RATE"; absent in benches before the Poisson load
    load = load_file.read_text().split()[0] if load_file.exists() else "closed16"
    print(f"load: {load}")
    rounds = sorted(p for p in out.iterdir() if p.is_dir() and p.name.startswith("round"))
    ratios: dict[tuple[str, str], list[float]] = {}
    again: dict[tuple[str, str], list[float]] = {}
    own_rates: list[float] = []
    print(
        "| round | peer | metric | peer's own | batchmark | peer / batchmark | peer's records, batchmark's "
        "definitions / batchmark |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rounds:
        for peer in PEERS:
            got = pair(r / peer)
            if got is None:
                print(f"| {r.name} | {PEERS[peer]} | (no pair: see {r / peer}) | | | | |")
                continue
            reported, summary, recomputed = got
            own_rates.append(summary["throughput"]["whole_run"]["output_token_rate"])
            for row, name, where, _ in ROWS:
                mine = from_summary(summary, name, where)
                theirs, ratio, re_ratio = compared(reported, recomputed, name, where, mine)
                if ratio is not None:
                    ratios.setdefault((peer, row), []).append(ratio)
                if re_ratio is not None:
                    again.setdefault((peer, row), []).append(re_ratio)
                cells = (fmt(theirs), fmt(mine), fmt(ratio), fmt(re_ratio))
                print(f"| {r.name} | {PEERS[peer]} | {row} | " + " | ".join(cells) + " |")
            theirs_c, mine_c = (cohort(sends_of(r / peer, who)) for who in ("peer-imported", "batchmark"))
            print(f"| {r.name} | {PEERS[peer]} | requests per send cohort | {fmt(theirs_c)} | {fmt(mine_c)} | | |")
    print()
    print("| peer | metric | peer / batchmark: median [range] | verdict | peer's records, batchmark's definitions |")
    print("|---|---|---|---|---|")
    for peer in PEERS:
        for row, _, _, target in ROWS:
            values, re = ratios.get((peer, row), []), again.get((peer, row), [])
            shown = f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]" if values else "n/a"
            re_shown = f"{statistics.median(re):.3f} [{min(re):.3f}, {max(re):.3f}]" if re else "n/a"
            judged = verdict(values, target_of(row, target, peer, load))
            print(f"| {PEERS[peer]} | {row} | {shown} | {judged} | {re_shown} |")
    if own_rates:
        print()
        mid, low, high = statistics.median(own_rates), min(own_rates), max(own_rates)
        print(f"batchmark's own output tok/s, {len(own_rates)} runs: median {mid:.4g}, range {low:.4g}-{high:.4g}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
