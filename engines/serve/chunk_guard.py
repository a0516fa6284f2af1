"""Refuse a chunked request body that declares more than the body limit as soon as its size line arrives.

aiohttp's C parser (llhttp) reads a chunk's size and tells the application nothing of it, so a request declaring
a chunk of 2^64 - 1 bytes was refused only once more than `--max-body-mb` had arrived: a client could hold a
connection, and a handler waiting on its body, as long as it liked (issue 32). `GuardedRequestHandler` is
aiohttp's connection protocol with one addition: what its parser has just read also goes, in order, to a
`ChunkSizes` (chunk_sizes.py), and on its verdict about request k

- a body declared too big: request k's body fails with aiohttp's own `HTTPRequestEntityTooLarge` (the handler
  reading it answers the JSON 413), nothing more is read from the connection, and it closes after answering k;
- framing the scanner does not follow (an upgrade, CONNECT, a very long head): the connection closes after
  answering k, since nothing after k would be checked.

Requests before k on a keep-alive or pipelined connection are answered as usual. The verdict waits until
aiohttp's parser has produced request k (it lags the scanner while its queue of pipelined requests is full).

The same scanner knows when each request's first byte and last body byte arrive (`ChunkSizes.receiving`), which
aiohttp does not tell: it has no read timeout for a request (its `keepalive_timeout` closes a connection idle
before a request line, counted from the previous answer, and nothing bounds a head or body in progress once a
handler runs). So a slowloris client, trickling a head or owing the rest of a Content-Length, held a connection
and a handler for ever. Each request now has `read_timeout_s` from the read that brought its first byte to the
one that brings its last (its clock: read_deadline.py); past it the connection reads nothing more, logs one line, and

- a head still arriving, nothing else on the connection: a 408 JSON answer is written and the connection closes;
- a head still arriving behind requests being answered: those are answered (a stream is never cut), then it closes;
- a body still arriving: its payload fails with `RequestReadTimeout` (errors.py), so the handler reading it answers
  408 `request_timeout`, or aiohttp's lingering read of a body nobody reads ends; the connection then closes.

Only receiving counts: once a request's body is in, its response may take as long as it takes. Time the server
itself stops reading (aiohttp pauses the transport while its queues are full) is not the client's: a deadline that
passes then starts again.

This reaches into aiohttp's RequestHandler (`_messages`, `_request_count`, `_close`, `_force_close`, `_waiter`,
`_reading_paused`, `_buffer_paused`, `_next_keepalive_close_time`, and Server's `_loop` and `_kwargs`): aiohttp is
pinned in pyproject.toml, and
tests/http/test_serve_security.py and test_read_deadline.py fail if they change.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import RequestHandler

from engines.serve.chunk_sizes import ChunkSizes, Verdict
from engines.serve.errors import RequestReadTimeout
from engines.serve.read_deadline import ReadDeadline, timeout_answer

log = logging.getLogger("batchmark.serve")
# the idle close of a connection whose request began is put this long past the request's read deadline, so that
# the deadline's 408 is written first (two timers due at one instant run in no order one can rely on)
_IDLE_CLOSE_AFTER_DEADLINE_S = 1.0


class GuardedRequestHandler(RequestHandler):
    __slots__ = (
        "_chunks",
        "_deadline",
        "_newest",
        "_refused",
        "_stopped_at",
        "_timed_out",
        "_verdict",
    )

    def __init__(
        self, manager: web.Server, max_body_bytes: int, read_timeout_s: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self._chunks = ChunkSizes(max_body_bytes)
        self._newest: tuple[int, Any] | None = None  # aiohttp's latest request: its number and queue entry
        self._verdict: Verdict | None = None  # the scanner's, until applied
        self._refused = False
        self._stopped_at = 0  # the request at which the scanner stopped following
        self._deadline = None if read_timeout_s is None else ReadDeadline(self._loop, read_timeout_s, self._expired)
        self._timed_out = False

    def data_received(self, data: bytes) -> None:
        if (self._refused or self._timed_out) and data:
            return  # the rest of a body refused or too slow: dropped unread, the connection closes after its answer
        # the bytes aiohttp's request parser reads now (not an upgraded protocol's, not a closing connection's)
        parsed = not (self._force_close or self._close or self._upgraded or self._payload_parser is not None)
        before = self._request_count
        super().data_received(data)  # aiohttp's `data_received(b"")` re-parses what its full queue held back
        after = self._request_count
        if parsed and data and not self._chunks.stopped:
            self._verdict = self._chunks.feed(data)
            self._refused = self._verdict is not None and self._verdict.declared is not None
            if self._verdict is not None:
                self._stopped_at = self._verdict.message
        verdict = self._verdict
        if verdict is not None and verdict.message <= after:
            self._verdict = None
            if verdict.message > before:  # produced by this read: its entry is still at the queue's end
                entry = self._messages[verdict.message - after - 1]
            else:  # an earlier read's last request (the scanner is never behind aiohttp's parser)
                entry = self._newest[1] if self._newest and self._newest[0] == verdict.message else None
            self._apply(verdict, entry)
        if after != before:
            self._newest = (after, self._messages[-1])
        if parsed and data and self._deadline is not None and self._deadline.watch(self._receiving()):
            # aiohttp's idle close (keepalive_timeout) takes a handler waiting for a request as idle, a head still
            # arriving included, and would cut it without an answer: a request once begun is the deadline's
            close_after = self._loop.time() + self._deadline.timeout_s + _IDLE_CLOSE_AFTER_DEADLINE_S
            self._next_keepalive_close_time = max(self._next_keepalive_close_time, close_after)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _receiving(self) -> int | None:
        """The request whose bytes are arriving (1 = the connection's first), None between requests."""
        if not self._chunks.stopped:
            return self._chunks.receiving
        if self._refused:  # its 413 is on its way and nothing more is read
            return None
        # past an upgrade, CONNECT or a very long head the connection closes after request k: until aiohttp has
        # all of k, k is still arriving
        k = self._stopped_at
        if self._request_count < k:
            return k
        newest = self._newest
        if self._request_count == k and newest is not None and newest[0] == k and not newest[1][1].is_eof():
            return k
        return None

    def _expired(self) -> None:
        """The read deadline of the request arriving passed."""
        deadline = self._deadline
        assert deadline is not None
        if self._force_close or self.transport is None or self._timed_out:
            return
        if self._reading_paused or self._buffer_paused:  # aiohttp stopped reading, not the client: wait again
            deadline.again()
            return
        self._timed_out = True
        k = deadline.request
        peer = self.transport.get_extra_info("peername")
        peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "a client"
        newest = self._newest
        if newest is not None and newest[0] == k:  # its head is in: the body is late
            payload = newest[1][1]
            log.warning(
                "%s: request %d's body not received within %g s; its read fails (408) and the connection closes",
                peer,
                k,
                deadline.timeout_s,
            )
            if payload is not EMPTY_PAYLOAD and not payload.is_eof():
                payload.set_exception(RequestReadTimeout(f"the body did not arrive within {deadline.timeout_s:g} s"))
                payload.feed_eof()
            self._close_after(newest[1])
            return
        idle = self._waiter is not None and not self._waiter.done() and not self._messages
        log.warning(
            "%s: request %d's head not received within %g s; %s",
            peer,
            k,
            deadline.timeout_s,
            "answering 408 and closing the connection" if idle else "closing the connection after the answers due",
        )
        if not idle:
            self._close_after(self._messages[-1] if self._messages else None)
            return
        self.transport.write(timeout_answer(deadline.timeout_s))
        self.force_close()  # the transport sends what it holds, then closes

    def _close_after(self, entry: Any) -> None:
        """Close the connection once `entry` (a queue entry, or the request in hand when it is not queued) is
        answered; what is queued before it is answered as usual."""
        for index, queued in enumerate(self._messages):
            if queued is entry:  # not yet handled: it answers, then the connection closes
                message, payload = entry
                replace = getattr(message, "_replace", None)  # a parse error's entry has none: aiohttp closes
                if replace is not None:
                    self._messages[index] = (replace(should_close=True), payload)
                return
        self.close()  # the request in hand: the connection closes once it is answered

    def _apply(self, verdict: Verdict, entry: Any) -> None:
        if verdict.declared is not None:
            message, payload = entry if entry is not None else (None, None)
            if not getattr(message, "chunked", False) or payload is EMPTY_PAYLOAD:
                # the scanner and aiohttp disagree on which request this is (not seen in any test): the request
                # cannot be told, so the connection goes at once
                log.warning("chunk size check lost track of request %d; closing the connection", verdict.message)
                self.force_close()
                return
            limit = self._chunks.limit
            log.debug("refused a chunked body declaring %d bytes (limit %d)", verdict.declared, limit)
            payload.set_exception(web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=verdict.declared))
            payload.feed_eof()  # no lingering read of a body that will never be read
        self._close_after(entry)


class GuardedServer(web.Server):
    """aiohttp's low-level server whose connections are GuardedRequestHandlers."""

    def __init__(self, *args: Any, max_body_bytes: int, read_timeout_s: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_body_bytes = max_body_bytes
        self.read_timeout_s = read_timeout_s

    def __call__(self) -> RequestHandler:
        return GuardedRequestHandler(self, self.max_body_bytes, self.read_timeout_s, loop=self._loop, **self._kwargs)


class GuardedAppRunner(web.AppRunner):
    """`web.AppRunner` serving `app` over GuardedRequestHandlers with `max_body_bytes` as the declared limit and
    `read_timeout_s` (None: none) as each request's read deadline."""

    __slots__ = ("_max_body_bytes", "_read_timeout_s")

    def __init__(
        self, app: web.Application, *, max_body_bytes: int, read_timeout_s: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(app, **kwargs)
        self._max_body_bytes = max_body_bytes
        self._read_timeout_s = read_timeout_s

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()  # the app's startup runs here; its Server is rebuilt guarded
        return GuardedServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,
            max_body_bytes=self._max_body_bytes,
            read_timeout_s=self._read_timeout_s,
            **plain._kwargs,
        )
