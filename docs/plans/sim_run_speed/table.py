"""The lines of rounds3.sh or smallrounds.sh (rounds.txt) as a markdown table of every run, then each tree's
median and range, and each tree's per-round difference from base.

    python docs/plans/sim_run_speed/table.py /tmp/f35fast/t3/rounds.txt
"""

import statistics
import sys
from pathlib import Path


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s (range {min(values):.2f}-{max(values):.2f})"


lines = Path(sys.argv[1]).read_text().splitlines()
rows = [line.split() for line in lines if line.startswith("round")]
trees = list(dict.fromkeys(r[2] for r in rows))
by: dict[str, dict[str, list[str]]] = {}
for r in rows:
    by.setdefault(r[1], {})[r[2]] = r
print("| round | " + " | ".join(f"{t}: wall (user), load before" for t in trees) + " |")
print("|---|" + "---|" * len(trees))
for i, runs in by.items():
    cells = [f"{runs[t][3]} UTC: {runs[t][6]} s ({runs[t][9]} s), {runs[t][5]}" if t in runs else "-" for t in trees]
    print(f"| {i} | " + " | ".join(cells) + " |")
print()
for t in trees:
    got = [by[i][t] for i in by if t in by[i]]
    walls, users, loads = ([float(r[k]) for r in got] for k in (6, 9, 5))
    print(f"{t}: {len(got)} runs, wall {spread(walls)}, user {spread(users)}, load before {min(loads)}-{max(loads)}")
for t in [t for t in trees if t != "base"] if "base" in trees else []:
    d = [float(by[i][t][6]) - float(by[i]["base"][6]) for i in by if t in by[i] and "base" in by[i]]
    per, less = ", ".join(f"{x:+.2f}" for x in d), sum(x < 0 for x in d)
    print(f"{t} - base, wall, per round: {per}; median {statistics.median(d):+.2f} s; less in {less} of {len(d)}")
