"""`batchmark serve` as an attacker meets it: every route but /health needs the key, the key never reaches
the log (not even through aiohttp's parser errors), a huge chunk is refused at once, a disconnect is one line."""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import time

import aiohttp
import pytest
from test_http_server_contract import MODEL, call, engine_for

from engines.serve import make_app
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


@pytest.mark.parametrize(
    "body",
    [
        "Content-Length: 2097152\r\n\r\nab",  # 2 MiB announced against a 1 MiB limit
        pytest.param(
            "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab",  # a chunk of 2^64 - 1 bytes
            marks=pytest.mark.xfail(
                strict=True,
                reason="aiohttp's C parser (llhttp) does not expose a chunk's declared size to the app: the body"
                " is refused only once more than --max-body-mb arrived (issue 32, not done)",
            ),
        ),
    ],
    ids=["content-length", "chunk-2^64-1"],
)
def test_a_body_announced_too_big_is_refused_at_once(keyed, body):
    reply, took = _raw(keyed.url, (HEAD + body).encode(), wait_s=3.0)
    assert reply[9:12] == b"413" and took < 2.0, (reply[:80], took)


def test_a_chunked_body_past_the_limit_is_refused_as_it_arrives(keyed):
    chunk = b"x" * 2**16
    data = HEAD.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + (b"10000\r\n" + chunk + b"\r\n") * 17
    reply, took = _raw(keyed.url, data, wait_s=3.0)  # 17 x 64 KiB = 1.06 MiB against a 1 MiB limit
    assert reply[9:12] == b"413" and took < 2.0, (reply[:80], took)


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
