"""`batchmark serve`'s request read deadline (--request-read-timeout): a client that trickles a head, or owes the
rest of a body, gets 408 (or, behind answers still due, a close) soon after the deadline, with one log line and
no traceback; a request that arrives in time, an idle keep-alive connection and a stream longer than the
deadline are untouched. Time bounds are upper bounds several times the deadline: the machine is loaded."""

from __future__ import annotations

import io
import json
import logging
import socket
import time

import pytest
from test_http_server_contract import KV, MODEL, call

from engines.engine_parts import EngineOptions
from engines.inprocess import InProcessEngine
from engines.serve import make_app
from engines.serve.background import BackgroundServer

DEADLINE_S = 0.5
WITHIN_S = 8.0  # the deadline, plus a loaded 2-core machine's margin: an upper bound, never a tight one
HEAD = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@pytest.fixture(scope="module")
def logged():
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield buffer
    root.removeHandler(handler)
    root.setLevel(old_level)


@pytest.fixture(scope="module")
def slow(embedded, logged):
    """A server with a 0.5 s read deadline whose engine takes 20 ms a step (a stream of 60 tokens: over 1 s)."""

    def app():
        engine = InProcessEngine(embedded, EngineOptions(kv=KV, step_delay_s=0.02))
        return make_app(engine, embedded.tokenizer, MODEL, request_read_timeout_s=DEADLINE_S)

    with BackgroundServer(app) as server:
        yield server


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=WITHIN_S)


def _until_answered_or_closed(sock: socket.socket, limit_s: float = WITHIN_S) -> bytes:
    """Everything the server sends until it closes the connection (or limit_s passes)."""
    sock.settimeout(limit_s)
    reply = b""
    end = time.monotonic() + limit_s
    try:
        while time.monotonic() < end and (chunk := sock.recv(65536)):
            reply += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return reply


def _until(sock: socket.socket, marker: bytes, limit_s: float = 60.0) -> bytes:
    """What the server sends until `marker` (the connection stays open)."""
    sock.settimeout(limit_s)
    reply = b""
    while marker not in reply:
        reply += sock.recv(65536) or pytest.fail(f"closed before {marker!r}: {reply[-200:]!r}")
    return reply


def _json_body(reply: bytes) -> dict:
    return json.loads(reply.partition(b"\r\n\r\n")[2])


def _completion(tokens: int, stream: bool = False) -> bytes:
    body = json.dumps({"model": MODEL, "prompt": "a b c", "max_tokens": tokens, "ignore_eos": True, "stream": stream})
    return (HEAD + f"Content-Length: {len(body)}\r\n\r\n{body}").encode()


def test_a_head_trickled_byte_by_byte_gets_408_and_a_close(slow, logged):
    before = len(logged.getvalue())
    head = (HEAD + "Content-Length: 2\r\nX-Slow: " + "a" * 200 + "\r\n\r\n{}").encode()
    with _connect(slow.url) as sock:
        sock.settimeout(0.1)
        start = time.monotonic()
        reply, closed = b"", False
        for byte in head:  # 0.1 s a byte: the whole head would take 25 s
            try:
                sock.sendall(bytes([byte]))
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            reply += chunk
            if not chunk or b"}}" in reply:
                break
        took = time.monotonic() - start
        if not closed:
            reply += _until_answered_or_closed(sock)
    assert took < WITHIN_S, took
    assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
    error = _json_body(reply)["error"]
    assert error["type"] == error["code"] == "request_timeout", error
    written = logged.getvalue()[before:]
    assert written.count("not received within") == 1 and "Traceback" not in written, written


def test_a_body_owed_after_its_head_gets_408_and_a_close(slow, logged):
    before = len(logged.getvalue())
    with _connect(slow.url) as sock:
        sock.sendall((HEAD + "Authorization: Bearer never-logged\r\nContent-Length: 100\r\n\r\n").encode() + b"{" * 10)
        start = time.monotonic()
        reply = _until_answered_or_closed(sock)  # to the close: the connection does not stay open
        took = time.monotonic() - start
    assert took < WITHIN_S and reply.startswith(b"HTTP/1.1 408 "), (took, reply[:200])
    error = _json_body(reply)["error"]
    assert error["code"] == "request_timeout" and error["type"] == "request_timeout", error
    assert b"connection: close" in reply.lower()
    written = logged.getvalue()[before:]
    assert written.count("body not received within") == 1, written
    assert "Traceback" not in written and "never-logged" not in written, written


def test_a_body_trickled_past_the_deadline_gets_408(slow):
    """Bytes keep coming, a few every 0.1 s: the deadline counts from the first, not from the latest."""
    with _connect(slow.url) as sock:
        sock.sendall((HEAD + "Content-Length: 1000\r\n\r\n").encode())
        sock.settimeout(0.1)
        start, reply = time.monotonic(), b""
        while time.monotonic() - start < WITHIN_S and not reply:
            try:
                sock.sendall(b"   ")
                reply = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        took = time.monotonic() - start
        reply += _until_answered_or_closed(sock)
    assert took < WITHIN_S and reply.startswith(b"HTTP/1.1 408 "), (took, reply[:200])


def test_a_body_left_unread_by_its_handler_still_closes(slow):
    """/health answers without reading the body it was sent: aiohttp's lingering read of it ends at the deadline."""
    with _connect(slow.url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        start = time.monotonic()
        reply = _until_answered_or_closed(sock)
        took = time.monotonic() - start
    assert reply.startswith(b"HTTP/1.1 200 ") and took < WITHIN_S + 10, (took, reply[:200])


def test_requests_in_time_a_long_idle_and_a_long_stream_are_untouched(slow):
    assert call(slow.url, "GET", "/health")[0] == 200
    with _connect(slow.url) as sock:
        request = _completion(4)
        sock.sendall(request[:30])  # in two parts, well inside the deadline
        time.sleep(0.1)
        sock.sendall(request[30:])
        first = _until(sock, b'"usage"')
        assert first.startswith(b"HTTP/1.1 200 "), first[:200]
        time.sleep(DEADLINE_S * 3)  # idle between requests: the keep-alive timeout's, not the read deadline's
        start = time.monotonic()
        sock.sendall(_completion(60, stream=True))  # 60 steps of 20 ms: the response outlasts the deadline
        reply = _until(sock, b"data: [DONE]")
        took = time.monotonic() - start
        sock.sendall(_completion(2))  # and the connection still serves
        assert b"HTTP/1.1 200 " in _until(sock, b'"usage"')  # after the stream's last chunk, maybe
    assert reply.startswith(b"HTTP/1.1 200 ") and reply.count(b"data: {") == 61, reply[-300:]
    assert b"data: [DONE]" in reply and took > DEADLINE_S, took


def test_a_head_trickled_behind_a_stream_does_not_cut_it(slow, logged):
    before = len(logged.getvalue())
    with _connect(slow.url) as sock:
        sock.sendall(_completion(60, stream=True) + HEAD[:20].encode())  # the next request's head never ends
        reply = _until_answered_or_closed(sock, 60.0)  # the stream whole, then the close
    assert reply.startswith(b"HTTP/1.1 200 ") and b"data: [DONE]" in reply, reply[-300:]
    # behind a stream, the late head gets a close, never a 408 (matched as a status line: a header's value, such
    # as the port in the replica's name, may hold "408")
    assert reply.count(b"data: {") == 61 and b"HTTP/1.1 408" not in reply
    written = logged.getvalue()[before:]
    assert "closing the connection after the answers due" in written and "Traceback" not in written, written


def test_after_the_slow_senders_the_log_has_no_traceback(slow, logged):
    assert call(slow.url, "GET", "/health")[0] == 200
    written = logged.getvalue()
    assert "Traceback" not in written and "Unhandled exception" not in written, written
    assert "never-logged" not in written
