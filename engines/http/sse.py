"""Incremental Server-Sent Events decoder for OpenAI-style streams.

Network reads cut the stream anywhere: one read may hold several events, an event may span reads,
and a line ending may be split between its `\\r` and `\\n`. The decoder keeps the unfinished tail
and returns only complete events, so the caller can stamp every event of one read with the same
receipt time. Only `data:` matters to OpenAI streams; `event:` names are kept for error events,
comments (`:` lines) and `id:`/`retry:` fields are ignored.
"""

from __future__ import annotations

from typing import NamedTuple

# An event bigger than this is a broken stream, not a long context: stop before memory runs out.
DEFAULT_MAX_EVENT_BYTES = 64 * 2**20


class SSEEvent(NamedTuple):
    """One server-sent event: its name ("message" unless the server named it) and its data."""

    event: str  # "message" unless the server named it
    data: bytes  # the data lines joined by "\n"


class SSEError(ValueError):
    """The byte stream is not valid SSE (an oversized event)."""


class SSEDecoder:
    """Incremental server-sent-events parser: feed it bytes as they arrive, take whole events out."""

    __slots__ = ("_buf", "_data", "_event", "_max", "_size")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._size = 0  # bytes in `_data`: an event's complete lines count against the limit too
        self._event = b""
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf + chunk if self._buf else chunk
        events: list[SSEEvent] = []
        if not self._data and b"\r" not in buf:
            # Fast path for the usual framing ("data: {...}\n\n", LF only): split on blank lines and
            # take each one-line data block as is; anything else goes through the line parser.
            blocks = buf.split(b"\n\n")
            self._buf = blocks.pop()
            for block in blocks:
                if block.startswith(b"data: ") and b"\n" not in block:
                    events.append(SSEEvent("message", block[6:]))
                else:
                    for line in block.split(b"\n"):
                        self._line(line, events)
                    self._line(b"", events)
        else:
            start = 0
            while True:
                end = buf.find(b"\n", start)
                if end < 0:
                    break
                line = buf[start:end]
                start = end + 1
                if line.endswith(b"\r"):
                    line = line[:-1]
                self._line(line, events)
            self._buf = buf[start:]
        if len(self._buf) + self._size > self._max:
            raise SSEError(f"an SSE event exceeds {self._max} bytes")
        return events

    def close(self) -> list[SSEEvent]:
        """At end of stream: an event missing only its final blank line still counts (lenient)."""
        events: list[SSEEvent] = []
        if self._buf:
            self._line(self._buf.rstrip(b"\r"), events)
            self._buf = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                name = self._event.decode("utf-8", "replace") if self._event else "message"
                events.append(SSEEvent(name, self._data[0] if len(self._data) == 1 else b"\n".join(self._data)))
                self._data = []
                self._size = 0
            self._event = b""
            return
        if line[0] == 0x3A:  # ":" starts a comment (keep-alive pings)
            return
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self._max:  # many complete lines of one event (CRLF framing takes this path)
                raise SSEError(f"an SSE event exceeds {self._max} bytes")
        elif name == b"event":
            self._event = value
