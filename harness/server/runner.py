"""Run an app on a socket until SIGINT/SIGTERM, then drain: finish what runs, refuse what comes."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

from aiohttp import web

from harness.server.app import begin_shutdown, drain
from harness.server.state import STATE


async def serve(
    app: web.Application,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> bool:
    """Serve until `stop` is set or a signal arrives. Returns True if every request in flight finished."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    # handler_cancellation: a client that disconnects cancels its handler, which aborts its sequence
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, backlog=2048)
        await site.start()
        bound = runner.addresses[0]
        announce(f"listening on http://{bound[0]}:{bound[1]}")
        await stop.wait()
        state = app.get(STATE)
        if state is None:  # not a batchmark app (a test server): aiohttp's own shutdown is enough
            return True
        begin_shutdown(app)
        announce(f"shutting down: draining {state.in_flight} requests (up to {state.drain_timeout_s:g} s)")
        drained = await drain(app)
        if not drained:
            announce(f"drain timed out; aborting {state.in_flight} requests")
        return drained
    finally:
        await runner.cleanup()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
