"""Prints the table of version 2 of docs/peers/agreement-protocol.md from one bench directory written by
`VERSION=2 docs/peers/agreement.sh` (its runs in order under OUT_DIR/runs/NNN-WHO/).

Per peer run, a sandwich: the peer's own figure over the geometric mean of batchmark's figures in the runs just
before and just after it (both on the same server, nothing between); where the peer's file holds per-request data,
also batchmark's definitions recomputed from the peer's timings over the same mean. Then per peer and metric the
geometric mean of its sandwiches with the 95% Student t interval, and the protocol's verdict on the interval.

    python docs/peers/agreement_table_v2.py OUT_DIR
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from agreement_table import PEERS, ROWS, compared, fmt, from_summary


def ours(run: Path) -> dict | None:
    path = run / "batchmark" / "metrics.json"
    return json.loads(path.read_text())["engines"]["http"] if path.exists() else None


def theirs(run: Path) -> tuple[dict, dict | None] | None:
    """(the peer's reported figures, the import's recomputed summary or None) of one peer run."""
    path = run / "peer-imported" / "metrics.json"
    if not path.exists():
        return None
    imported = json.loads(path.read_text())
    label = next(iter(imported["imported"]))
    block = imported["imported"][label]
    return block["reported"], imported["engines"][label] if block["per_request"] else None


def interval(ratios: list[float]) -> tuple[float, float, float] | None:
    """Geometric mean of the ratios and its 95% Student t interval."""
    if len(ratios) < 2:
        return None
    logs = [math.log(r) for r in ratios]
    mean, half = statistics.mean(logs), stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / len(logs) ** 0.5
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def verdict(bounds: tuple[float, float, float] | None, target: float | None) -> str:
    if target is None:
        return "not judged"
    if bounds is None:
        return "cannot tell (fewer than 2 sandwiches)"
    _, low, high = bounds
    if 1 - target <= low and high <= 1 + target:
        return "holds"
    if low > 1 + target or high < 1 - target:
        return "does not hold"
    return f"cannot tell (interval {low:.3f}-{high:.3f})"


def main(out: Path) -> None:
    runs = sorted(p for p in (out / "runs").iterdir() if p.is_dir())
    ratios: dict[tuple[str, str], list[float]] = {}
    again: dict[tuple[str, str], list[float]] = {}
    print(
        "| run | peer | metric | peer's own | batchmark before, after | peer / their geometric mean "
        "| peer's records, batchmark's definitions / the same |"
    )
    print("|---|---|---|---|---|---|---|")
    for i, run in enumerate(runs):
        peer = run.name.split("-", 1)[1]
        if peer not in PEERS:
            continue
        flanks = [ours(runs[j]) for j in (i - 1, i + 1) if 0 <= j < len(runs)]
        got = theirs(run)
        if got is None or len(flanks) != 2 or None in flanks:
            print(f"| {run.name} | {PEERS[peer]} | (no sandwich: see {run}) | | | | |")
            continue
        reported, recomputed = got
        for row, name, where, _ in ROWS:
            before, after = (from_summary(summary, name, where) for summary in flanks)
            mine = math.sqrt(before * after) if before and after else None
            own, ratio, re_ratio = compared(reported, recomputed, name, where, mine)
            if ratio is not None:
                ratios.setdefault((peer, row), []).append(ratio)
            if re_ratio is not None:
                again.setdefault((peer, row), []).append(re_ratio)
            cells = (fmt(own), f"{fmt(before)}, {fmt(after)}", fmt(ratio), fmt(re_ratio))
            print(f"| {run.name} | {PEERS[peer]} | {row} | " + " | ".join(cells) + " |")
    print()
    print(
        "| peer | metric | sandwiches | peer / batchmark: geometric mean [95% interval] | verdict "
        "| peer's records, batchmark's definitions |"
    )
    print("|---|---|---|---|---|---|")
    for peer in PEERS:
        for row, _, _, target in ROWS:
            values, re = ratios.get((peer, row), []), again.get((peer, row), [])
            shown, re_shown = interval(values), interval(re)
            cell = "n/a" if shown is None else "{:.3f} [{:.3f}, {:.3f}]".format(*shown)
            re_cell = "n/a" if re_shown is None else "{:.3f} [{:.3f}, {:.3f}]".format(*re_shown)
            print(f"| {PEERS[peer]} | {row} | {len(values)} | {cell} | {verdict(shown, target)} | {re_cell} |")
    rates = [s["throughput"]["whole_run"]["output_token_rate"] for run in runs if (s := ours(run))]
    if rates:
        print()
        print(
            f"batchmark's own output tok/s, {len(rates)} runs: median {statistics.median(rates):.4g}, "
            f"range {min(rates):.4g}-{max(rates):.4g}"
        )
    warm = out / "warmup" / "rates.txt"
    if warm.exists():
        print("warm-up: " + " ".join(warm.read_text().split()))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
