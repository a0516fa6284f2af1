"""A request's read deadline on one connection: from the read that brings its first byte to the one that brings
its last body byte (issue 32).

Two servers keep it: `batchmark serve`'s connections (chunk_guard.py, over aiohttp) and the zero-delay server's
(zero_server.py, a bare asyncio protocol). Each feeds what it reads to a `ChunkSizes` (chunk_sizes.py), which says
which request is arriving, and tells `ReadDeadline.watch`: the clock starts when a new request begins, stops when
none is arriving, and past it the connection's `expired` callback runs. `timeout_answer` is the 408 a connection
writes, raw, when a head has not arrived in time and nothing else is being answered on it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from engines.serve.errors import ApiError


class ReadDeadline:
    """The read deadline of the request arriving on one connection."""

    __slots__ = ("_expired", "_handle", "_loop", "request", "timeout_s")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_s: float, expired: Callable[[], None]) -> None:
        self._loop = loop
        self.timeout_s = timeout_s
        self._expired = expired
        self._handle: asyncio.TimerHandle | None = None
        self.request = 0  # the request whose clock runs or ran last (1 = the connection's first)

    def watch(self, receiving: int | None) -> bool:
        """`receiving`: the request whose bytes are arriving, None between requests. True when its clock starts
        now (a new request, or the same one after its clock stopped)."""
        if receiving is None:
            self.cancel()
            return False
        if receiving == self.request and self._handle is not None:
            return False
        self.cancel()
        self.request = receiving
        self.again()
        return True

    def again(self) -> None:
        """The whole deadline again for the same request (time the server, not the client, stopped reading)."""
        self._handle = self._loop.call_later(self.timeout_s, self._passed)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _passed(self) -> None:
        self._handle = None
        self._expired()


def timeout_answer(timeout_s: float) -> bytes:
    """The raw 408 `request_timeout` answer, closing the connection, for a request not arrived within `timeout_s`."""
    error = ApiError(408, f"the request did not arrive within {timeout_s:g} s", code="request_timeout")
    body = json.dumps(error.body()).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json; charset=utf-8\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )
