"""The zero-delay server (`engines.serve.zero_server`) as a child process: its URL, then stop it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def zero_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engines.serve.zero_server", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on " in line, line
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
