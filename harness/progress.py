"""Live progress of an engine run on stderr: a bar for a terminal, a status line now and then otherwise.

Output piped to a file or a CI log used to show nothing for the whole run (a busy machine's demo sat
silent for 16 minutes), because a carriage-return bar is only readable on a terminal. So the mode
follows stderr: `bar` redraws one line in place; `lines` prints a full line every `LINE_EVERY_S` seconds
and a last one at the end, each saying what was sent, done and in flight and how long it has run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Literal, TextIO

Mode = Literal["bar", "lines"]
LINE_EVERY_S = 5.0
Progress = Callable[[int, int, int, int], None]  # sent, done, errors, total (harness.loadgen.Progress)


def default_mode(stream: TextIO | None = None) -> Mode:
    return "bar" if (stream or sys.stderr).isatty() else "lines"


class ProgressPrinter:
    """Call it with (sent, done, errors, total) as often as you like; `close()` ends its output."""

    def __init__(self, label: str, mode: Mode, stream: TextIO | None = None, every_s: float = LINE_EVERY_S) -> None:
        self.label, self.mode, self.every_s = label, mode, every_s
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self._next_line = self.started  # the first call prints at once: a run is seen to have started
        self._last: tuple[int, int, int, int] | None = None

    def __call__(self, sent: int, done: int, errors: int, total: int) -> None:
        self._last = (sent, done, errors, total)
        now = time.perf_counter()
        if self.mode == "bar":
            bar = "#" * int(30 * done / max(total, 1))
            self.stream.write(f"\r[{self.label}] [{bar:<30}] {self._status(now)} ")
            self.stream.flush()
        elif now >= self._next_line:
            self._next_line = now + self.every_s
            self._line(now)

    def close(self) -> None:
        if self.mode == "bar":
            self.stream.write("\n")
        elif self._last is not None:
            self._line(time.perf_counter())
        self.stream.flush()

    def _status(self, now: float) -> str:
        sent, done, errors, total = self._last or (0, 0, 0, 0)
        failed = f", {errors} failed" if errors else ""
        return f"sent {sent}/{total}, done {done}, in flight {sent - done}{failed}, {now - self.started:.1f} s"

    def _line(self, now: float) -> None:
        self.stream.write(f"[{self.label}] {self._status(now)}\n")
        self.stream.flush()
