"""Run `serve()` for an app on its own event loop in a background thread: tests and in-process E2E runs.

The app is built inside the thread, so its engine binds to the server's loop, exactly as under
`batchmark serve`; the caller's loop (a client, the load generator) stays separate.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web

from engines.serve.runner import serve

T = TypeVar("T")


class BackgroundServer:
    """The server on a thread of its own with its own event loop (tests); `url` once started."""

    def __init__(self, app_factory: Callable[[], web.Application], host: str = "127.0.0.1", port: int = 0) -> None:
        self._factory = app_factory
        self._host = host
        self._port = port
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.app: web.Application | None = None
        self.url = ""
        self.lines: list[str] = []  # what serve() announced
        self.drained: bool | None = None

    def start(self, timeout_s: float = 60.0) -> str:
        self._thread = threading.Thread(target=self._run, name="batchmark-test-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"server did not start within {timeout_s} s")
        if self._error is not None:
            raise RuntimeError(f"server failed to start: {self._error!r}") from self._error
        return self.url

    def stop(self, timeout_s: float = 60.0) -> bool | None:
        """Signal shutdown (like SIGTERM): drain, then clean up. Returns whether everything drained."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout_s)
        return self.drained

    def call(self, fn: Callable[[], Awaitable[T]], timeout_s: float = 30.0) -> T:
        """Run a coroutine on the server's loop (e.g. `begin_shutdown`) and return its result."""
        assert self._loop is not None
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(_awaited(fn), self._loop)
        return future.result(timeout_s)

    def __enter__(self) -> BackgroundServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        def announce(line: str) -> None:
            self.lines.append(line)
            if line.startswith("listening on "):
                self.url = line.removeprefix("listening on ")
                self._ready.set()

        try:
            self.app = self._factory()
            self.drained = await serve(self.app, self._host, self._port, announce=announce, stop=self._stop)
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._ready.set()


async def _awaited(fn: Callable[[], Awaitable[T]]) -> T:
    return await fn()
