"""Follow the request framing of one HTTP/1.1 connection in its raw bytes, to see each chunk's declared size.

aiohttp's C parser (llhttp) reads a chunk's size line and tells the application nothing of it. `ChunkSizes`
reads the same bytes after it: request heads (for Content-Length, Transfer-Encoding, Upgrade, CONNECT), bodies
skipped by count without copying, chunk-size lines digit by digit and trailers, so a body that *declares* more
than the limit is seen the moment the digit that takes it past arrives, before any of its data.

It only needs to agree with llhttp where llhttp accepts the bytes: where llhttp refuses them (no CR before an
LF, a space after a chunk size, Content-Length with Transfer-Encoding), aiohttp answers 400 and closes, so what
the scanner makes of them does not matter. Where it cannot follow (an upgrade or CONNECT, after which the bytes
are another protocol's; a head past MAX_HEAD_BYTES; framing it cannot read) it stops and says so, and the
caller closes the connection after that request rather than read on unchecked (engines/serve/chunk_guard.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# a head split across reads is kept until it ends; aiohttp refuses a header field over 8190 bytes itself, and a
# longer head (dozens of long headers) is legal but not followed: the connection closes after answering it
MAX_HEAD_BYTES = 2**18
_HEAD_END = b"\r\n\r\n"
# the headers that frame a body, as llhttp matches them: at a line start, no space before the colon
_FRAMING = re.compile(rb"\r\n(transfer-encoding|content-length|upgrade):([^\r\n]*)", re.IGNORECASE)
_HEX = {byte: int(chr(byte), 16) for byte in b"0123456789abcdefABCDEF"}
_CRLF = b"\r\n"

_HEAD, _BODY, _SIZE, _SIZE_LINE, _DATA, _TRAILER, _STOPPED = range(7)


@dataclass(frozen=True)
class Verdict:
    """What the scanner found in request `message` (1 = the connection's first, as aiohttp counts them)."""

    message: int
    declared: int | None  # the chunked body's declared size so far, above the limit; None: it stopped following


@dataclass
class ChunkSizes:
    """One connection's request framing; `feed` every byte aiohttp's parser read, in order."""

    limit: int  # the largest body, in bytes, its chunks may declare together
    heads: int = 0  # request heads read so far
    _state: int = _HEAD
    _head: bytearray = field(default_factory=bytearray)  # a head split across reads
    _left: int = 0  # body bytes (or chunk data and its CRLF) still to skip
    _size: int = 0  # the chunk size read so far
    _digits: int = 0  # the hex digits of the chunk size read so far
    _declared: int = 0  # the sizes of the body's earlier chunks
    _line: bytearray = field(default_factory=bytearray)  # a trailer line's start, split across reads
    _last: bool = False  # an upgrade: what follows this request's body is not HTTP to this scanner

    @property
    def stopped(self) -> bool:
        return self._state == _STOPPED

    @property
    def receiving(self) -> int | None:
        """The request (numbered as a Verdict's) whose first byte has arrived and its last not yet; None between
        requests (empty lines before a request line do not start one) and once stopped."""
        if self._state == _HEAD:
            return self.heads + 1 if self._head else None
        return None if self._state == _STOPPED else self.heads

    def feed(self, data: bytes) -> Verdict | None:
        """Read on; a Verdict (and the scanner stops) once a body declares more than `limit` or the framing is
        one it does not follow, else None."""
        at, end = 0, len(data)
        while at < end:
            state = self._state
            if state in (_BODY, _DATA):
                step = min(self._left, end - at)
                at += step
                self._left -= step
                if not self._left:
                    if state == _DATA:
                        self._state = _SIZE
                    elif verdict := self._message_done():
                        return verdict
            elif state == _SIZE:
                digit = _HEX.get(data[at])
                if digit is None:
                    if not self._digits:  # llhttp refuses a size line without a hex digit
                        return self._stop()
                    self._state = _SIZE_LINE  # an extension (`;name=value`) or the CRLF: skipped to the LF
                    continue
                at += 1
                self._digits += 1
                self._size = self._size * 16 + digit
                if self._declared + self._size > self.limit:  # more digits only make it bigger: refuse now
                    self._state = _STOPPED
                    return Verdict(self.heads, self._declared + self._size)
            elif state == _SIZE_LINE:
                lf = data.find(b"\n", at)
                if lf < 0:
                    return None
                at = lf + 1
                if self._size:
                    self._declared += self._size
                    self._left = self._size + len(_CRLF)
                    self._state = _DATA
                else:  # the last chunk: trailers, up to an empty line
                    self._state = _TRAILER
                self._size = self._digits = 0
            elif state == _TRAILER:
                lf = data.find(b"\n", at)
                if lf < 0:
                    self._line += data[at : at + 2 - len(self._line)]
                    return None
                line = bytes(self._line) + data[at : lf + 1]
                self._line.clear()
                at = lf + 1
                if line[:2] in (_CRLF, b"\n") and (verdict := self._message_done()):
                    return verdict
            elif state == _HEAD:
                at, verdict = self._read_head(data, at)
                if verdict:
                    return verdict
            else:
                return None
        return None

    def _read_head(self, data: bytes, at: int) -> tuple[int, Verdict | None]:
        kept = len(self._head)
        if not kept:
            while at < len(data) and data[at] in _CRLF:  # llhttp skips empty lines before a request line
                at += 1
            stop = data.find(_HEAD_END, at)
            if stop >= 0:  # the usual case: the whole head in one read, parsed where it lies
                return stop + len(_HEAD_END), self._head_done(data[at:stop])
        self._head += data[at:]
        # the end may straddle two reads: look from the last three bytes kept before this one
        stop = self._head.find(_HEAD_END, max(kept - len(_HEAD_END) + 1, 0)) if kept else -1
        if stop >= 0:
            head = bytes(self._head[:stop])
            self._head.clear()
            return at + stop + len(_HEAD_END) - kept, self._head_done(head)
        if len(self._head) > MAX_HEAD_BYTES:
            self.heads += 1  # aiohttp refuses it or makes it a request: the one to close the connection after
            return len(data), self._stop()
        return len(data), None

    def _head_done(self, head: bytes) -> Verdict | None:
        self.heads += 1
        if head.startswith(b"CONNECT "):  # a tunnel: llhttp reads no body, and what follows is not HTTP
            return self._stop()
        codings: list[bytes] = []
        length = b""
        for name, value in _FRAMING.findall(head):
            name = name.lower()
            if name == b"transfer-encoding":
                codings += [coding.strip(b" \t").lower() for coding in value.split(b",")]
            elif name == b"content-length":
                if length:  # llhttp refuses a second one
                    return self._stop()
                length = value.strip(b" \t")
            else:
                self._last = True
        if codings:
            if codings[-1] != b"chunked" or length:  # llhttp (strict, as aiohttp runs it for requests) refuses these
                return self._stop()
            self._state = _SIZE
            self._declared = 0
        elif length:
            if not length.isdigit():
                return self._stop()
            self._left = int(length)
            self._state = _BODY if self._left else _HEAD
            if not self._left:
                return self._message_done()
        else:
            return self._message_done()
        return None

    def _message_done(self) -> Verdict | None:
        self._state = _HEAD
        if self._last:
            return self._stop()
        return None

    def _stop(self) -> Verdict:
        self._state = _STOPPED
        return Verdict(self.heads, None)
