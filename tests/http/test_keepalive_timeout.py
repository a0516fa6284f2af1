"""`batchmark serve --keepalive-timeout`: an idle keep-alive connection, before its first request or between two,
stays open until the timeout and closes after it; the server's limits are checked from their option table (one
line, exit 2) and docs/http.md states the table's defaults."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from engines.model.embedded import TOKENIZER_DIR
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from engines.server_options import SERVER_OPTIONS
from engines.zero_engine import ZeroLatencyEngine
from harness.cli import main

KEEPALIVE_S = 2.0
EARLY_S = 0.05  # the client connects a little before the server's clock starts: never more than this early
WITHIN_S = 8.0  # a loaded 2-core machine's margin after the timeout: an upper bound, never a tight one
HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture(scope="module")
def server():
    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    with BackgroundServer(
        lambda: make_app(ZeroLatencyEngine(), tokenizer, "zero", keepalive_timeout_s=KEEPALIVE_S)
    ) as s:
        yield s


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=KEEPALIVE_S + WITHIN_S)


def _answer(sock: socket.socket) -> bytes:
    reply = b""
    while b'"ok"' not in reply:
        reply += sock.recv(65536) or pytest.fail(f"closed before the answer: {reply!r}")
    return reply


def _seconds_until_closed(sock: socket.socket, since: float) -> float:
    try:
        extra = sock.recv(65536)
    except ConnectionResetError:
        extra = b""
    assert extra == b"", extra  # nothing more is sent: the server closes
    return time.monotonic() - since


def test_an_idle_connection_before_its_first_request_closes_after_the_timeout(server):
    with _connect(server.url) as sock:
        took = _seconds_until_closed(sock, time.monotonic())
    assert KEEPALIVE_S - EARLY_S <= took < KEEPALIVE_S + WITHIN_S, took


def test_an_idle_connection_is_kept_before_the_timeout_and_closed_after_it(server):
    with _connect(server.url) as sock:
        sock.sendall(HEALTH)
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")
        time.sleep(KEEPALIVE_S / 4)  # idle, but not long enough: the connection still serves
        sock.sendall(HEALTH)
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")
        took = _seconds_until_closed(sock, time.monotonic())
    assert KEEPALIVE_S - EARLY_S <= took < KEEPALIVE_S + WITHIN_S, took


def test_a_head_still_arriving_when_the_idle_timeout_passes_is_the_read_deadlines(server):
    """The idle close does not cut a request once begun: its head may take the read deadline (30 s here)."""
    with _connect(server.url) as sock:
        time.sleep(KEEPALIVE_S * 3 / 4)
        sock.sendall(HEALTH[:10])  # begun before the idle timeout, still arriving after it
        time.sleep(KEEPALIVE_S / 2)
        sock.sendall(HEALTH[10:])
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("flag", ["--keepalive-timeout", "--request-read-timeout"])
@pytest.mark.parametrize(
    ("value", "problem"), [("0", "must be > 0"), ("-1", "must be > 0"), ("nan", "finite"), ("inf", "finite")]
)
def test_bad_timeouts_are_one_line_and_exit_2(capsys, flag, value, problem):
    code = main(["serve", "--port", "0", flag, value])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"batchmark: error: {flag} {value}: ") and problem in err, err


def test_the_docs_state_each_server_limit_with_the_tables_default():
    text = Path(__file__).parents[2].joinpath("docs/http.md").read_text()
    for option in SERVER_OPTIONS:
        stated = re.search(rf"`{option.flag_name}` \(default ([0-9.]+)", text)
        assert stated is not None, f"docs/http.md does not state {option.flag_name}'s default"
        assert float(stated.group(1)) == option.default, (option.flag_name, stated.group(1))
