"""`batchmark serve --step-trace FILE`: every engine step's record as one line of JSON, the lines a run
directory's `steps/<engine>-t<trial>.jsonl` holds, so that a served engine's step times can be set against a
profile's price of the same step shapes (docs/cluster.md, "Where the twin's shortfall goes"). Without the flag
a replica reports its steps only as /metrics' histogram."""

from __future__ import annotations

import json
from pathlib import Path

from engines.step_record import StepRecord


class StepTrace:
    """Appends each step's record; line-buffered, so a reader counting lines between runs sees whole steps."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8", buffering=1)

    def write(self, record: StepRecord) -> None:
        self._file.write(json.dumps(record.to_json()) + "\n")

    def close(self) -> None:
        self._file.close()
