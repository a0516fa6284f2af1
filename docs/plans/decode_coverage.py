"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): how many
single-sequence decode steps (one decode row, no prefill, no held slot) a run's traces of one engine hold in each
256-key context bin, up to 2,048+: whether a fit run covers the shapes a pair runs. Reads files only.

    .venv/bin/python docs/plans/decode_coverage.py ENGINE RUN [RUN ...]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

BIN = 256
LAST = 8  # 2,048+ keys


def main(engine: str, runs: list[Path]) -> None:
    print("run: single-row decode steps per context bin (keys) " + " ".join(f"{BIN * b}+" for b in range(LAST + 1)))
    for run in runs:
        counts: Counter[int] = Counter()
        for path in sorted((run / "steps").glob(f"{engine}-t*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                step = json.loads(line)
                if step["prefill_tokens"] == 0 and step["decode_seqs"] == 1 and step["idle_slots"] == 0:
                    counts[min(step["decode_context"] // BIN, LAST)] += 1
        print(f"{run}: " + " ".join(str(counts[b]) for b in range(LAST + 1)))


if __name__ == "__main__":
    main(sys.argv[1], [Path(p) for p in sys.argv[2:]])
