"""A JSON Lines writer for hundreds of thousands of records: orjson, written in batches.

A simulated hour of continuous batching is half a million step records; `json.dumps` and a flush per
record (`harness.jsonl.JsonlWriter`, right for a real engine's few steps per second) would cost more
than simulating them. orjson serialises a record (a dict or a dataclass such as `StepRecord`, fields in
order) several times faster and the file is written every `batch_rows` records, so an interrupted
simulation keeps all but its last batch. The lines hold the same JSON values `json.dumps` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import orjson

BATCH_ROWS = 16384


class BatchedJsonlWriter:
    """`write(item)` per record: a dict or a dataclass instance."""

    def __init__(self, path: Path, batch_rows: int = BATCH_ROWS) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.batch_rows = batch_rows
        self._file: IO[bytes] = path.open("ab")
        self._lines: list[bytes] = []
        self.count = 0

    def write(self, item: Any) -> None:
        self._lines.append(orjson.dumps(item))
        if len(self._lines) >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self._file.write(b"\n".join(self._lines) + b"\n")
            self._file.flush()
            self.count += len(self._lines)
            self._lines = []

    def close(self) -> None:
        self.flush()
        self._file.close()

    def __enter__(self) -> BatchedJsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
