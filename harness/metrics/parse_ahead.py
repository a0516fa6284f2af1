"""A JSON-lines file parsed on a second thread while it is written, for the metrics that read it back.

A simulated hour's step trace (400,000 lines, 258 MB) takes pyarrow 2-3 s to parse after the run, on a
2-core machine whose second core sat idle through the simulation that wrote it: the simulation is one
Python thread, and pyarrow parses without the GIL. So the trace's writer hands each buffer it writes here
(`feed`), a thread parses them in pieces of `PIECE_BYTES` on one core, and `finish` joins the pieces and
gives the table to `harness.metrics.arrow.remember`. Reading the file back (`read_json_lines`) then finds
the table made: there is still one reader, which reads the file and checks its CRC as for any table it
kept, so the metrics come from the same bytes by the same parse as before. Anything that goes wrong
here (a piece pyarrow refuses, pieces whose types differ, a file that held lines before) only leaves the
reader to parse the file itself, as it did.
"""

from __future__ import annotations

import queue
import threading
import zlib
from pathlib import Path

import pyarrow as pa

from harness.metrics.arrow import ARROW_ERRORS, parse_json_lines, remember

PIECE_BYTES = 16 << 20  # pyarrow's block: what is fed, parsed about 16 MB at a time


class ParseAhead:
    """`feed(data)` with whole lines, in the order written; `finish(path)` once the file is closed."""

    def __init__(self, schema: pa.Schema | None, unexpected: str = "ignore") -> None:
        self._schema, self._unexpected = schema, unexpected
        self._piece: list[bytes] = []
        self._piece_bytes = 0
        # whole pieces only: the thread wakes a few dozen times, not per buffer (each wake-up takes the GIL)
        self._queue: queue.SimpleQueue[list[bytes] | None] = queue.SimpleQueue()
        self._tables: list[pa.Table] = []
        self._size = self._crc = 0
        self._failed = False
        self._thread = threading.Thread(target=self._work, name="parse-ahead", daemon=True)
        self._thread.start()

    def feed(self, data: bytes) -> None:
        self._piece.append(data)
        self._piece_bytes += len(data)
        if self._piece_bytes >= PIECE_BYTES:
            self._queue.put(self._piece)
            self._piece, self._piece_bytes = [], 0

    def finish(self, path: Path) -> None:
        """Wait for the last piece; keep the table if the file holds exactly the bytes fed."""
        if self._piece:
            self._queue.put(self._piece)
        self._queue.put(None)
        self._thread.join()
        if self._failed or not self._tables or path.stat().st_size != self._size:
            return
        try:
            table = pa.concat_tables(self._tables)  # pieces typed alike (a schema's columns always are)
        except ARROW_ERRORS:
            return
        remember(path, self._size, self._crc, self._schema, self._unexpected, table)

    def _work(self) -> None:
        while (piece := self._queue.get()) is not None:
            data = b"".join(piece)
            self._size += len(data)
            self._crc = zlib.crc32(data, self._crc)  # the GIL is released for buffers this large
            if not self._failed:
                try:  # on one core: the other runs the simulation
                    self._tables.append(parse_json_lines(data, self._schema, self._unexpected, threads=False))
                except ARROW_ERRORS:
                    self._failed = True
