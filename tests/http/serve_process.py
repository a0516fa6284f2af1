"""`batchmark serve` as a child process for tests and benchmarks: start, wait for its URL, stop."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

STARTUP_S = 180.0  # torch + the embedded model on a busy 2-core machine


class ServeProcess:
    def __init__(self, *args: str) -> None:
        command = [sys.executable, "-m", "harness.cli", "serve", "--port", "0", *args]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: list[str] = []
        self.url = ""
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def wait_ready(self, timeout_s: float = STARTUP_S) -> str:
        deadline = time.monotonic() + timeout_s
        while not self.url and time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise RuntimeError(f"batchmark serve exited: {''.join(self.lines)}")
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].strip()
        if not self.url:
            raise TimeoutError(f"batchmark serve did not start in {timeout_s} s: {''.join(self.lines)}")
        return self.url

    def _pump(self) -> None:  # a thread: the pipe's lines, as they come, without buffering surprises
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def stop(self, timeout_s: float = 60.0, *, signalled: bool = False) -> tuple[int, str]:
        """SIGTERM (unless the caller already sent one: a second signal is not what is under test), then wait."""
        if not signalled and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        return self.proc.returncode, "".join(self.lines)
