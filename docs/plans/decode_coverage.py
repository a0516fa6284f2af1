"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): how many
single-sequence decode steps (one decode row, no prefill, no held slot) a run's traces of one engine hold in each
256-key context bin, up to 2,048+: whether a fit run covers the shapes a pair runs. Reads files only.

    .venv/bin/python docs/plans/decode_coverage.py ENGINE RUN [RUN ...]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

BIN = 256
LAST = 8  # 2,048+ keys


def print_coverage(
    engine: str, runs: list[Path], what: str, size: int, last: int, bin_of: Callable[[dict[str, Any]], int | None]
) -> None:
    """Per run, how many of one engine's steps fall in each `size`-wide bin up to `last` (`bin_of`: None skips)."""
    print(f"run: {what} " + " ".join(f"{size * b}+" for b in range(last + 1)))
    for run in runs:
        counts: Counter[int] = Counter()
        for path in sorted((run / "steps").glob(f"{engine}-t*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                value = bin_of(json.loads(line))
                if value is not None:
                    counts[min(value // size, last)] += 1
        print(f"{run}: " + " ".join(str(counts[b]) for b in range(last + 1)))


def single_row_decode_context(step: dict[str, Any]) -> int | None:
    if step["prefill_tokens"] == 0 and step["decode_seqs"] == 1 and step["idle_slots"] == 0:
        return int(step["decode_context"])
    return None


def main(engine: str, runs: list[Path]) -> None:
    what = "single-row decode steps per context bin (keys)"
    print_coverage(engine, runs, what, BIN, LAST, single_row_decode_context)


if __name__ == "__main__":
    main(sys.argv[1], [Path(p) for p in sys.argv[2:]])
