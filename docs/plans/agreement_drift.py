"""Why the server's speed drifts inside the peer-agreement bench (issue 34): every figure of
docs/measurements/2026-12-06-agreement-drift.md, from one bench directory written by docs/peers/agreement.sh.

Per run, in bench order (the warm-up, then each pair's two runs): who ran, the seconds since the warm-up started
(the server starts about 4 s before it), who ran just before, the 1-minute load average at the start, the run's
whole-run output tok/s (batchmark's own summary, or the peer's own figure read through `batchmark import`), and its
output tok/s in four equal quarters of the run's span (tokens whose time falls in the quarter, from the per-request
token times; n/a where the peer's file has none). Then batchmark's own runs grouped by the run just before them,
and the run-to-run spread of batchmark's runs. With a scheduler log (the bench's sampler of the server's two
processes, /proc/PID/task/*/schedstat every second) it also prints, per run, the server's CPU seconds and run-queue
wait seconds, both per 1,000 output tokens, and the share of one core the server used; with the CPU log (the
bench's sampler of /proc/stat every second) it prints, per run, the share of CPU 0 (the server's core) that was
busy with anything but the server, and the share stolen by the hypervisor. Then the noise floor of one pair and
the number of pairs it implies for a 3% resolution.

    python docs/plans/agreement_drift.py BENCH_DIR [SCHED_LOG CPU_LOG]
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from scipy import stats

PEERS = ("vllm", "guidellm", "aiperf", "inference_perf")
QUARTERS = 4
TWIN_GAP_S = 10  # two runs of batchmark this close count as back to back
USER_HZ = 100  # /proc/stat's ticks per second


def clock(hms: str) -> float:
    hours, minutes, seconds = hms.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def runs_of(bench: Path) -> list[dict[str, Any]]:
    """Every run of the bench in the order it ran: (who, pair directory, start, end, load at start)."""
    runs = []
    for load in [bench / "warmup" / "load.txt", *sorted(bench.glob("round*/*/load.txt"))]:
        marks = {p[0]: p for p in (line.split() for line in load.read_text().splitlines()) if len(p) >= 3}
        for name, fields in marks.items():
            if name.endswith("-start") and name[:-6] + "-end" in marks:
                who = name[:-6]
                end = clock(marks[who + "-end"][1])
                runs.append(
                    {"who": who, "dir": load.parent, "start": clock(fields[1]), "end": end, "load": float(fields[2])}
                )
    runs.sort(key=lambda run: run["start"])
    return runs


def token_times(run: dict[str, Any]) -> list[float] | None:
    """All output-token times of one run, relative to its own start; None where its file gives no per-request times."""
    side = "batchmark" if run["who"] == "batchmark" else "peer-imported"
    path = run["dir"] / side / "records.jsonl"
    lines = [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    times = [t for line in lines for t in (json.loads(line).get("token_times") or [])]
    return times or None


def whole_rate(run: dict[str, Any]) -> float:
    if run["who"] == "batchmark":
        summary = json.loads((run["dir"] / "batchmark" / "metrics.json").read_text())["engines"]["http"]
        return summary["throughput"]["whole_run"]["output_token_rate"]
    imported = json.loads((run["dir"] / "peer-imported" / "metrics.json").read_text())["imported"]
    return next(iter(imported.values()))["reported"]["output_token_rate"]["mean"]


def quarter_rates(times: list[float] | None) -> list[float] | None:
    """Output tok/s in QUARTERS equal slices of the span from the first to the last token."""
    if not times:
        return None
    first, last = min(times), max(times)
    width = (last - first) / QUARTERS
    counts = [0] * QUARTERS
    for t in times:
        counts[min(int((t - first) / width), QUARTERS - 1)] += 1
    return [c / width for c in counts]


def sched_samples(path: Path) -> list[tuple[float, float, float]]:
    """(time, CPU ns, run-queue wait ns), summed over the server's two processes, per sampler line."""
    samples = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 8:  # T HH:MM:SS.mmm PID cpu wait PID cpu wait
            samples.append((clock(parts[1]), float(parts[3]) + float(parts[6]), float(parts[4]) + float(parts[7])))
    return samples


def cpu0_samples(path: Path) -> list[tuple[float, float, float, float]]:
    """(time, CPU 0 busy s, CPU 0 steal s, CPU 0 idle s) per sampler line: the all-CPU line less CPU 1's."""
    samples = []
    for line in path.read_text().splitlines():
        if line.startswith("T ") and "|" in line:
            left, right = line.split("|")
            total, cpu1 = left.split()[3:13], right.split()[1:11]
            ticks = [(int(a) - int(b)) / USER_HZ for a, b in zip(total, cpu1, strict=True)]
            busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]  # user nice system irq softirq
            samples.append((clock(left.split()[1]), busy, ticks[7], ticks[3] + ticks[4]))
    return samples


def nearest(samples: list[tuple[float, ...]], t: float) -> tuple[float, ...] | None:
    best = min(samples, key=lambda s: abs(s[0] - t)) if samples else None
    return best if best and abs(best[0] - t) <= 2 else None


def pairs_needed(spread: float, half_width: float) -> int:
    """Smallest n whose 95% interval (Student t) of a mean of n log ratios with this sd is within half_width."""
    n = 2
    while t95(n) * spread / math.sqrt(n) > half_width:
        n += 1
    return n


def t95(n: int) -> float:
    """The two-sided 95% Student t quantile for a mean of n values."""
    return float(stats.t.ppf(0.975, n - 1))


def noise_floor(runs: list[dict[str, Any]]) -> None:
    """The spread of one pair, from batchmark's runs that ran back to back (at most TWIN_GAP_S apart, nothing
    between): their true ratio is 1, so the spread is the root mean square of their log ratios. One run's is that
    over sqrt(2); a sandwich's (a peer's run over the geometric mean of the batchmark runs just before and after
    it) is sqrt(1 + 1/2) times one run's, if the runs' errors are independent."""
    twins = [
        b["rate"] / a["rate"]
        for a, b in itertools.pairwise(runs)
        if a["who"] == b["who"] == "batchmark" and b["start"] - a["end"] <= TWIN_GAP_S
    ]
    if not twins:
        print("no back-to-back batchmark runs: no noise floor")
        return
    pair_sd = math.sqrt(statistics.mean(math.log(r) ** 2 for r in twins))
    sandwich_sd = pair_sd / math.sqrt(2) * math.sqrt(1.5)
    print(
        "batchmark back-to-back runs, second / first: "
        + ", ".join(f"{r:.3f}" for r in twins)
        + f"; rms log ratio {pair_sd:.3f}, one run {pair_sd / math.sqrt(2):.3f}, sandwich {sandwich_sd:.3f}"
    )
    for design, spread in (("pairs", pair_sd), ("sandwiches", sandwich_sd)):
        print(
            f"{design} per peer for a 95% interval of the mean log ratio within +-3%: "
            f"{pairs_needed(spread, 0.03)} (3 give +-{t95(3) * spread / math.sqrt(3):.1%})"
        )


def fmt(values: list[float] | None) -> str:
    return "n/a" if values is None else " ".join(f"{v:5.0f}" for v in values)


def main(bench: Path, sched: Path | None, cpu_log: Path | None) -> None:
    runs = runs_of(bench)
    samples = sched_samples(sched) if sched else []
    cpu0 = cpu0_samples(cpu_log) if cpu_log else []
    origin = runs[0]["start"]
    print(
        "| # | run | pair | s since warm-up start | run before | load 1-min | output tok/s | per quarter "
        "(tok/s) | last 3 quarters / first | server CPU s / 1k tok | run-queue wait s / 1k tok | server core share "
        "| CPU 0 other busy | CPU 0 steal |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    previous = "(server start)"
    for i, run in enumerate(runs):
        run["rate"] = whole_rate(run)
        quarters = run["quarters"] = quarter_rates(token_times(run))
        run["lift"] = statistics.mean(quarters[1:]) / quarters[0] if quarters else None
        cpu = wait = share = other = steal = "n/a"
        a, b = nearest(samples, run["start"]), nearest(samples, run["end"])
        if a and b:
            kilotokens = run["rate"] * (run["end"] - run["start"]) / 1e3  # whole seconds: an approximation
            cpu, wait = f"{(b[1] - a[1]) / 1e9 / kilotokens:.2f}", f"{(b[2] - a[2]) / 1e9 / kilotokens:.2f}"
            share = f"{(b[1] - a[1]) / 1e9 / (b[0] - a[0]):.2f}"  # of one core, over the sampled span
        c, d = nearest(cpu0, run["start"]), nearest(cpu0, run["end"])
        if a and b and c and d:
            span = d[0] - c[0]
            other = f"{(d[1] - c[1] - (b[1] - a[1]) / 1e9) / span:.2f}"  # the server's share taken out
            steal = f"{(d[2] - c[2]) / span:.2f}"
        pair = "warmup" if run["dir"].name == "warmup" else f"{run['dir'].parent.name}/{run['dir'].name}"
        lift = "n/a" if run["lift"] is None else f"{run['lift']:.2f}"
        cells = (
            i,
            run["who"],
            pair,
            f"{run['start'] - origin:.0f}",
            previous,
            f"{run['load']:.2f}",
            f"{run['rate']:.0f}",
            fmt(quarters),
            lift,
            cpu,
            wait,
            share,
            other,
            steal,
        )
        print("| " + " | ".join(str(cell) for cell in cells) + " |")
        run["before"], previous = previous, run["who"]
    ours = [run for run in runs[1:] if run["who"] == "batchmark"]
    print()
    print("batchmark's own runs (warm-up excluded), by the run just before:")
    for before in sorted({run["before"] for run in ours}):
        rates = [run["rate"] for run in ours if run["before"] == before]
        print(f"  after {before:15s} n={len(rates)}: " + ", ".join(f"{r:.0f}" for r in rates))
    rates = [run["rate"] for run in ours]
    steady = rates[1:]  # without the first run after the warm-up
    for label, values in (("all", rates), ("without the first", steady)):
        mean, sd = statistics.mean(values), statistics.stdev(values)
        print(
            f"batchmark output tok/s, {label} ({len(values)} runs): mean {mean:.0f}, sd {sd:.0f} "
            f"(cv {sd / mean:.3f}), range {min(values):.0f}-{max(values):.0f}"
        )
    noise_floor(runs[1:])
    within = [statistics.stdev(q) / statistics.mean(q) for run in ours if (q := run["quarters"])]
    print(f"batchmark within-run cv of the quarter rates: median {statistics.median(within):.3f}")
    lifts = [run["lift"] for run in ours if run["lift"] is not None]
    print(
        f"batchmark last-3-quarters / first quarter: median {statistics.median(lifts):.2f}, "
        f"range {min(lifts):.2f}-{max(lifts):.2f}; warm-up {runs[0]['lift']:.2f}"
    )


if __name__ == "__main__":
    logs = [Path(arg) for arg in sys.argv[2:4]] + [None, None]
    main(Path(sys.argv[1]), logs[0], logs[1])
