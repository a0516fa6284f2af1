"""Run an app on a socket until SIGINT/SIGTERM, then drain: finish what runs, refuse what comes."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import Any

from aiohttp import web

from engines.api import REPLICA_HEADER
from engines.serve.app import begin_shutdown, drain
from engines.serve.chunk_guard import GuardedAppRunner
from engines.serve.state import DEFAULT_KEEPALIVE_TIMEOUT_S, STATE

_AFTER_DRAIN_S = 1.0  # the short handlers (health, metrics) that arrived just before the listener closed


async def serve(
    app: web.Application,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> bool:
    """Serve until `stop` is set or a signal arrives. Returns True if every request in flight finished.

    The first SIGINT/SIGTERM drains; a second one during the drain stops waiting (the operator's "now").
    """
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    state = app.get(STATE)

    def on_signal() -> None:
        if stop.is_set() and state is not None:
            announce(f"second signal: aborting {state.in_flight} requests")
            state.abandon_drain()
        stop.set()

    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(sig, on_signal)
            handled.append(sig)
    # handler_cancellation: a client that disconnects cancels its handler, which aborts its sequence.
    # shutdown_timeout: the graceful wait is our drain (bounded by --drain-timeout); what still runs after it is
    # cancelled at once, not given aiohttp's default 60 s more
    options: dict[str, Any] = {
        "handler_cancellation": True,
        "access_log": None,
        "shutdown_timeout": _AFTER_DRAIN_S,
        # an idle connection (before its first request or between two) closes after --keepalive-timeout; a request
        # once begun has --request-read-timeout instead
        "keepalive_timeout": DEFAULT_KEEPALIVE_TIMEOUT_S if state is None else state.keepalive_timeout_s,
    }
    # a batchmark app's connections refuse a chunked body declared over the limit at its size line, and answer 408
    # to a request whose bytes take longer than its read deadline to arrive (chunk_guard.py)
    runner = (
        web.AppRunner(app, **options)
        if state is None
        else GuardedAppRunner(
            app, max_body_bytes=state.max_body_bytes, read_timeout_s=state.request_read_timeout_s, **options
        )
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, backlog=2048)
        await site.start()
        bound = runner.addresses[0]
        if state is not None and state.replica_id is None:  # the default name: where it listens (port 0 resolved)
            state.replica_id = f"{bound[0]}:{bound[1]}"
        announce(f"listening on http://{bound[0]}:{bound[1]}")
        if state is not None:
            announce(f"replica id {state.replica_id} (every completion's {REPLICA_HEADER} header)")
        await stop.wait()
        if state is None:  # not a batchmark app (a test server): aiohttp's own shutdown is enough
            return True
        begin_shutdown(app)
        announce(f"shutting down: draining {state.in_flight} requests (up to {state.drain_timeout_s:g} s)")
        drained = await drain(app)
        if not drained and not state.drain_abandoned:
            announce(f"drain timed out; aborting {state.in_flight} requests")
        return drained
    finally:
        await runner.cleanup()
        for sig in handled:
            loop.remove_signal_handler(sig)
            # the process is on its way out: a late repeat of the signal must not turn a clean drain into death
            # by signal (exit -15 instead of 0) while the interpreter tears down
            signal.signal(sig, signal.SIG_IGN)
