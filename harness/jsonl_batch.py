"""A JSON Lines writer for hundreds of thousands of records: orjson, written through a large buffer.

A simulated hour of continuous batching is half a million step records; `json.dumps` and a flush per
record (`harness.jsonl.JsonlWriter`, right for a real engine's few steps per second) would cost more
than simulating them. orjson serialises a record (a dict or a dataclass such as `StepRecord`, fields in
order) several times faster, straight into the file's buffer, and the file is written every `BUFFER_BYTES`,
so an interrupted simulation keeps all but its last megabyte. (Joining batches of lines first cost more:
each batch is a fresh 10 MB object.) The lines hold the same JSON values `json.dumps` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import orjson

BUFFER_BYTES = 1 << 20
_LINE = orjson.OPT_APPEND_NEWLINE


class BatchedJsonlWriter:
    """`write(item)` per record: a dict or a dataclass instance."""

    def __init__(self, path: Path, buffer_bytes: int = BUFFER_BYTES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[bytes] = path.open("ab", buffering=buffer_bytes)

    def write(self, item: Any) -> None:
        self._file.write(orjson.dumps(item, option=_LINE))

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> BatchedJsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
