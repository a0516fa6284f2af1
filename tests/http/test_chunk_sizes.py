"""The chunk-size scanner reads a connection's request framing as aiohttp's C parser (llhttp) does: split at
every byte of a pipelined stream (leading empty lines, Content-Length and chunked bodies that contain heads and
hex, extensions, trailers), it counts the same requests at the same moments and refuses none; a body declared
over the limit is seen at the digit that takes it past, and an upgrade or CONNECT stops it."""

from __future__ import annotations

import asyncio
from unittest import mock

import pytest
from aiohttp.http_parser import HttpRequestParser

from engines.serve.chunk_sizes import ChunkSizes, Verdict

LIMIT = 2**20
BODY = b'{"a": "\r\n\r\nPOST / HTTP/1.1\r\n\r\nffffffff\r\n"}'
CHUNKED = b"POST /c HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n"
STREAM = b"".join(
    [
        b"\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY,
        CHUNKED + b"%x\r\n" % len(BODY) + BODY + b'\r\n3;ext=1;q="x"\r\nabc\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n',
        b"POST /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n000a\r\n0123456789\r\n0\r\n\r\n",
        b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"GET /f HTTP/1.0\r\n\r\n",
    ]
)


def _both(pieces: list[bytes]) -> int:
    """Feed the pieces to llhttp and to the scanner; after each, both have seen the same number of requests."""
    parser = HttpRequestParser(mock.Mock(), asyncio.new_event_loop(), 2**16)
    scanner = ChunkSizes(LIMIT)
    seen = 0
    for piece in pieces:
        seen += len(parser.feed_data(piece)[0])
        assert scanner.feed(piece) is None
        assert scanner.heads == seen, (scanner.heads, seen, pieces)
    return seen


def test_it_counts_requests_as_llhttp_does_at_every_split():
    assert _both([STREAM]) == 6
    for at in range(len(STREAM)):
        assert _both([STREAM[:at], STREAM[at:]]) == 6
    assert _both([STREAM[i : i + 1] for i in range(len(STREAM))]) == 6


@pytest.mark.parametrize(
    ("pieces", "declared"),
    [
        ([CHUNKED + b"ffffffffffffffff\r\nab"], 0xFFFFFF),  # refused at the sixth digit, before the line ends
        ([CHUNKED + b"ff", b"fff", b"f\r\n"], 0xFFFFFF),  # the size line split across reads
        ([CHUNKED + b"80000\r\n" + b"x" * 0x80000 + b"\r\n80001\r\n"], LIMIT + 1),  # the chunks' sum counts
    ],
)
def test_a_body_declared_over_the_limit_is_seen_at_once(pieces, declared):
    scanner = ChunkSizes(LIMIT)
    verdicts = [scanner.feed(piece) for piece in pieces]
    assert verdicts[-1] == Verdict(1, declared) and scanner.stopped


def test_a_chunk_of_exactly_the_limit_passes():
    scanner = ChunkSizes(LIMIT)
    assert scanner.feed(CHUNKED + b"100000\r\n" + b"x" * LIMIT + b"\r\n0\r\n\r\n" + CHUNKED) is None
    assert scanner.heads == 2 and not scanner.stopped


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
        b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["upgrade", "connect"],
)
def test_an_upgrade_or_connect_stops_it(head):
    scanner = ChunkSizes(LIMIT)
    assert scanner.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + head + CHUNKED + b"ffffffff\r\n") == Verdict(2, None)
