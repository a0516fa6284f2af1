"""Issue 30's fourth suite (docs/measurements/2026-12-06-fidelity-suite-v4.md): how many prefill steps of one
prompt alone (one prefill row, no decode row, no pad token) a run's traces of one engine hold in each 512-token bin
of prefill tokens, up to 2,048+: whether a fit run covers azure-code-static's unpadded long prefills, of which the
third suite's fit run had 3 of 512+ tokens. Reads files only; the counting is decode_coverage.py's.

    .venv/bin/python docs/plans/prefill_coverage.py ENGINE RUN [RUN ...]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from decode_coverage import print_coverage

BIN = 512
LAST = 4  # 2,048+ tokens


def one_prompt_prefill_tokens(step: dict[str, Any]) -> int | None:
    alone = step["num_running"] == 1 and step["decode_seqs"] == 0 and step["padded_tokens"] == 0
    return int(step["prefill_tokens"]) if step["prefill_tokens"] > 0 and alone else None


def main(engine: str, runs: list[Path]) -> None:
    what = "one-prompt prefill steps per prefill-token bin"
    print_coverage(engine, runs, what, BIN, LAST, one_prompt_prefill_tokens)


if __name__ == "__main__":
    main(sys.argv[1], [Path(p) for p in sys.argv[2:]])
