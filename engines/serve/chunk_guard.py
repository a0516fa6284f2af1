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
This reaches into aiohttp's RequestHandler (`_messages`, `_request_count`, `_close`, and Server's `_loop` and
`_kwargs`): aiohttp is pinned in pyproject.toml, and tests/http/test_serve_security.py fails if they change.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import RequestHandler

from engines.serve.chunk_sizes import ChunkSizes, Verdict

log = logging.getLogger("batchmark.serve")


class GuardedRequestHandler(RequestHandler):
    __slots__ = ("_chunks", "_newest", "_refused", "_verdict")

    def __init__(self, manager: web.Server, max_body_bytes: int, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._chunks = ChunkSizes(max_body_bytes)
        self._newest: tuple[int, Any] | None = None  # aiohttp's latest request: its number and queue entry
        self._verdict: Verdict | None = None  # the scanner's, until applied
        self._refused = False

    def data_received(self, data: bytes) -> None:
        if self._refused and data:
            return  # the rest of a body declared too big: dropped unread, the connection closes after its answer
        # the bytes aiohttp's request parser reads now (not an upgraded protocol's, not a closing connection's)
        parsed = not (self._force_close or self._close or self._upgraded or self._payload_parser is not None)
        before = self._request_count
        super().data_received(data)  # aiohttp's `data_received(b"")` re-parses what its full queue held back
        after = self._request_count
        if parsed and data and not self._chunks.stopped:
            self._verdict = self._chunks.feed(data)
            self._refused = self._verdict is not None and self._verdict.declared is not None
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
        for index, queued in enumerate(self._messages):
            if queued is entry:  # not yet handled: it answers, then the connection closes
                message, payload = entry
                replace = getattr(message, "_replace", None)  # a parse error's entry has none: aiohttp closes
                if replace is not None:
                    self._messages[index] = (replace(should_close=True), payload)
                return
        self.close()  # request k is the one in hand: the connection closes once it is answered


class GuardedServer(web.Server):
    """aiohttp's low-level server whose connections are GuardedRequestHandlers."""

    def __init__(self, *args: Any, max_body_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_body_bytes = max_body_bytes

    def __call__(self) -> RequestHandler:
        return GuardedRequestHandler(self, self.max_body_bytes, loop=self._loop, **self._kwargs)


class GuardedAppRunner(web.AppRunner):
    """`web.AppRunner` serving `app` over GuardedRequestHandlers with `max_body_bytes` as the declared limit."""

    __slots__ = ("_max_body_bytes",)

    def __init__(self, app: web.Application, *, max_body_bytes: int, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._max_body_bytes = max_body_bytes

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()  # the app's startup runs here; its Server is rebuilt guarded
        return GuardedServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,
            max_body_bytes=self._max_body_bytes,
            **plain._kwargs,
        )
