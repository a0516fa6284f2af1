"""`batchmark serve` as an attacker meets it: every route but /health needs the key, the key never reaches
the log (not even through aiohttp's parser errors), a body declared too big (by Content-Length or by a chunk's
size) is refused at once and its connection closed while keep-alive and pipelining still work, a disconnect is
one line."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
import time

import aiohttp
import pytest
from test_http_server_contract import MODEL, call, engine_for

from engines.serve import log_redact, make_app
from engines.serve.app import PUBLIC_PATHS
from engines.serve.background import BackgroundServer

KEY = "s3cret-Key-4242"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def logged():
    """Everything the server loggers write, at debug level, into one buffer."""
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
def keyed(embedded, logged):
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL, api_key=KEY, max_body_bytes=2**20)  # noqa: E731
    with BackgroundServer(app) as server:
        yield server


def _routes(server: BackgroundServer) -> list[tuple[str, str]]:
    assert server.app is not None
    return sorted(
        {(r.method, r.resource.canonical) for r in server.app.router.routes() if r.method not in ("HEAD", "*")}
    )


def test_every_route_but_health_needs_the_key(keyed):
    routes = _routes(keyed)
    assert ("POST", "/reset_prefix_cache") in routes and ("GET", "/metrics") in routes  # the walk is not empty
    for method, path in routes:
        status = call(keyed.url, method, path, {})[0]
        assert status == (200 if path in PUBLIC_PATHS else 401), (method, path, status)
    assert call(keyed.url, "POST", "/reset_prefix_cache", {}, headers=AUTH)[0] == 200
    assert call(keyed.url, "GET", "/metrics", headers=AUTH)[0] == 200


def test_metrics_public_opens_only_metrics(embedded):
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL, api_key=KEY, metrics_public=True)  # noqa: E731
    with BackgroundServer(app) as server:
        assert call(server.url, "GET", "/metrics")[0] == 200
        assert call(server.url, "POST", "/reset_prefix_cache", {})[0] == 401


def _raw(url: str, data: bytes, wait_s: float = 5.0) -> tuple[bytes, float]:
    """Send raw bytes, read the reply's head (or until the server closes or wait_s passes); (the reply, seconds
    to its first byte)."""
    host, port = url.removeprefix("http://").split(":")
    start = time.perf_counter()
    first = wait_s
    with socket.create_connection((host, int(port)), timeout=wait_s) as sock:
        sock.sendall(data)
        reply = b""
        try:
            while chunk := sock.recv(65536):
                first = min(first, time.perf_counter() - start)
                reply += chunk
                if b"\r\n\r\n" in reply:  # the status and headers are all a test looks at
                    break
        except (TimeoutError, ConnectionResetError):
            pass
    return reply, first


MALFORMED = {
    "nul byte": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\x00\r\n\r\n",
    "bare cr": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\rX: y\r\n\r\n",
    "obs-fold": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n {KEY}\r\n\r\n",
    "space before colon": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer {KEY}\r\n\r\n",
    "bad method": f"G\x00T /v1/models HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\n\r\n",
    # the audit's own (docs/measurements/2026-12-06-issue-32-audit.md)
    "tab before colon": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization\t: Bearer {KEY}\r\n\r\n",
    "lower-case name, DEL": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nauthorization: Bearer {KEY}\x7f\r\n\r\n",
    "key in the target": f"GET /v1/models?k={KEY}\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
    "bare LF lines": f"GET /v1/models HTTP/1.1\nHost: x\nAuthorization: Bearer {KEY}\x00\n\n",
    "line too long": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}{'A' * 9000}\r\n\r\n",
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_request_never_logs_the_key(keyed, logged, case):
    before = len(logged.getvalue())
    reply, _ = _raw(keyed.url, MALFORMED[case].encode("latin-1"))
    assert reply[:12] in (b"HTTP/1.0 400", b"HTTP/1.1 400"), reply[:80]
    time.sleep(0.05)  # the server logs after it answered
    written = logged.getvalue()[before:]
    assert KEY not in written and "Traceback" not in written, written


HEAD = f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
CHUNKED = HEAD + "Transfer-Encoding: chunked\r\n\r\n"
LIMIT = 2**20  # the keyed server's --max-body-mb


@pytest.mark.parametrize(
    "body",
    [
        "Content-Length: 2097152\r\n\r\nab",  # 2 MiB announced against a 1 MiB limit
        "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab",  # a chunk of 2^64 - 1 bytes
        "Transfer-Encoding: chunked\r\n\r\n8000000000000000\r\nab",  # 2^63
        "Transfer-Encoding: chunked\r\n\r\n00000000ffffffffffffffff\r\nab",  # leading zeros
        "Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFF;ext=1\r\nab",  # upper case, an extension
        "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\nffffffffffffffff\r\nab",  # the second chunk
    ],
    ids=["content-length", "chunk-2^64-1", "chunk-2^63", "leading-zeros", "upper-ext", "second-chunk"],
)
def test_a_body_announced_too_big_is_refused_at_once(keyed, body):
    reply, took = _raw(keyed.url, (HEAD + body).encode(), wait_s=3.0)
    assert reply[9:12] == b"413" and took < 1.0, (reply[:80], took)


def test_a_chunk_size_of_100_digits_closes_at_once(keyed):
    """llhttp refuses the size line itself (overflow) and the guard closes the connection: no 413 is written,
    but nothing is waited on either."""
    started = time.perf_counter()
    reply, _ = _raw(keyed.url, (CHUNKED + "f" * 100 + "\r\nab").encode(), wait_s=3.0)
    took = time.perf_counter() - started  # to the close, whether a reply came or not
    assert reply[9:12] in (b"", b"400", b"413") and took < 1.0, (reply[:80], took)


def _body(size: int) -> bytes:
    """A completion request of exactly `size` bytes: JSON padded with whitespace."""
    head = json.dumps({"model": MODEL, "prompt": "a b c", "max_tokens": 2}).encode()
    return head + b" " * (size - len(head))


def _chunked(body: bytes) -> bytes:
    return CHUNKED.encode() + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


def _replies(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """Read `count` responses (status, body) off a connection, each framed by its Content-Length."""
    buffer, out = b"", []
    while len(out) < count:
        while b"\r\n\r\n" not in buffer:
            buffer += sock.recv(65536) or pytest.fail(f"closed after {len(out)} replies: {buffer[:80]!r}")
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = int(next(line.split(b":")[1] for line in lines if line.startswith(b"content-length")))
        while len(buffer) < length:
            buffer += sock.recv(65536)
        out.append((int(head[9:12]), buffer[:length]))
        buffer = buffer[length:]
    return out


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _closed(sock: socket.socket, within_s: float = 2.0) -> bool:
    sock.settimeout(within_s)
    try:
        return sock.recv(65536) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_a_chunk_just_under_the_limit_is_served(keyed):
    with _connect(keyed.url) as sock:
        sock.sendall(_chunked(_body(LIMIT - 1)))
        assert _replies(sock, 1)[0][0] == 200


def test_a_large_chunk_split_across_writes_is_served(keyed):
    data = _chunked(_body(600_000))
    with _connect(keyed.url) as sock:
        for at in range(0, len(data), 65_000):
            sock.sendall(data[at : at + 65_000])
            time.sleep(0.02)
        assert _replies(sock, 1)[0][0] == 200


def test_a_chunk_size_line_split_across_writes(keyed):
    body = _body(3000)
    with _connect(keyed.url) as sock:  # "b" / "b8\r\n": 3000 bytes, served
        sock.sendall(CHUNKED.encode() + b"b")
        time.sleep(0.1)
        sock.sendall(b"b8\r\n" + body + b"\r\n0\r\n\r\n")
        assert _replies(sock, 1)[0][0] == 200
    with _connect(keyed.url) as sock:  # "fff" / "fffff\r\n": the handler already waits on the body; refused
        sock.sendall(CHUNKED.encode() + b"fff")
        time.sleep(0.2)
        sent = time.perf_counter()
        sock.sendall(b"fffff\r\nab")
        assert _replies(sock, 1)[0][0] == 413 and time.perf_counter() - sent < 1.0
        assert _closed(sock)


def test_pipelined_requests_on_a_keep_alive_connection(keyed):
    small = _chunked(_body(500))
    with _connect(keyed.url) as sock:  # two chunked requests in one write, then one more: all served
        sock.sendall(small + small)
        assert [status for status, _ in _replies(sock, 2)] == [200, 200]
        sock.sendall(small)
        assert _replies(sock, 1)[0][0] == 200
    with _connect(keyed.url) as sock:  # the first served, the second declared too big: 413, then closed
        sock.sendall(small + CHUNKED.encode() + b"ffffffffffffffff\r\nab")
        assert [status for status, _ in _replies(sock, 2)] == [200, 413]
        assert _closed(sock)


def test_a_refused_body_whose_handler_never_reads_it_closes_the_connection(keyed):
    with _connect(keyed.url) as sock:  # no key: the 401 is answered without reading the body
        sock.sendall(CHUNKED.replace(f"Authorization: Bearer {KEY}\r\n", "").encode() + b"ffffffffffffffff\r\n")
        assert _replies(sock, 1)[0][0] == 401
        assert _closed(sock)


def test_after_an_upgrade_request_the_connection_closes(keyed):
    """Past an upgrade the bytes may be another protocol's, so nothing after it is checked or served."""
    upgrade = f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nUpgrade: h2c\r\n\r\n"
    with _connect(keyed.url) as sock:
        sock.sendall(upgrade.encode() + CHUNKED.encode() + b"ffffffffffffffff\r\nab")
        assert _replies(sock, 1)[0][0] == 200
        assert _closed(sock)


def test_a_chunked_body_past_the_limit_is_refused_as_it_arrives(keyed):
    chunk = b"x" * 2**16
    data = HEAD.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + (b"10000\r\n" + chunk + b"\r\n") * 17
    reply, took = _raw(keyed.url, data, wait_s=3.0)  # 17 x 64 KiB = 1.06 MiB against a 1 MiB limit
    assert reply[9:12] == b"413" and took < 2.0, (reply[:80], took)


LONG_KEY = "sk-" + "abcdefghij" * 15  # aiohttp quotes 100 bytes of an over-long line: the key's head, cut short


def test_the_head_of_a_long_key_in_a_cut_line_is_redacted(embedded, logged):
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL, api_key=LONG_KEY)  # noqa: E731
    try:
        with BackgroundServer(app) as server:
            before = len(logged.getvalue())
            line = f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {LONG_KEY}{'A' * 9000}\r\n\r\n"
            reply, _ = _raw(server.url, line.encode())
            assert reply[9:12] == b"400", reply[:80]
            time.sleep(0.05)
            written = logged.getvalue()[before:]
            assert "Got more than" in written and LONG_KEY[:12] not in written and "Traceback" not in written, written
    finally:
        log_redact.install([KEY])  # the newest key set wins: the module's server keeps its own


def test_after_fuzz_and_disconnects_the_log_has_no_traceback_and_no_key(keyed, logged):
    async def disconnect_mid_stream() -> None:
        body = {"model": MODEL, "prompt": "a b c", "max_tokens": 200, "ignore_eos": True, "stream": True}
        async with aiohttp.ClientSession() as session:
            for _ in range(4):
                async with session.post(f"{keyed.url}/v1/completions", json=body, headers=AUTH) as response:
                    assert response.status == 200
                    await response.content.readline()  # one token arrived; now hang up

    asyncio.run(disconnect_mid_stream())
    for data in MALFORMED.values():
        _raw(keyed.url, data.encode("latin-1"))
    time.sleep(0.3)
    assert call(keyed.url, "GET", "/health")[0] == 200
    written = logged.getvalue()
    assert KEY not in written and "Traceback" not in written, written
