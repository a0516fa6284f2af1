"""`batchmark serve` as started from the command line (issue 32): it says what it does until it listens, and
after malformed requests, an over-long key line and clients hanging up mid-stream, its whole output (stdout and
stderr, where Python's last-resort log handler writes) holds no traceback and no piece of the key."""

from __future__ import annotations

import asyncio
import os

import aiohttp
from serve_process import ServeProcess
from test_serve_security import MALFORMED, _raw

KEY = "sk-cli-" + "0123456789" * 12  # long: aiohttp quotes 100 bytes of an over-long line, the key's head


def test_the_serve_log_after_fuzz_and_disconnects_holds_no_traceback_and_no_key(monkeypatch) -> None:
    monkeypatch.setitem(os.environ, "BATCHMARK_TEST_KEY", KEY)
    server = ServeProcess("--api-key-env", "BATCHMARK_TEST_KEY")
    try:
        url = server.wait_ready()
        for request in MALFORMED.values():
            _raw(url, request.replace("s3cret-Key-4242", KEY).encode("latin-1"))

        async def hang_up_mid_stream() -> None:
            body = {"model": "batchmark", "prompt": "a b c", "max_tokens": 200, "ignore_eos": True, "stream": True}
            headers = {"Authorization": f"Bearer {KEY}"}
            async with aiohttp.ClientSession() as session:
                for path in ("/v1/completions", "/v1/chat/completions"):
                    if path.endswith("chat/completions"):
                        body = {**body, "messages": [{"role": "user", "content": "hi"}]}
                    async with session.post(url + path, json=body, headers=headers) as response:
                        assert response.status == 200
                        await response.content.readline()  # a token arrived; now hang up

        asyncio.run(hang_up_mid_stream())
    finally:
        code, output = server.stop()
    assert code == 0, output
    said = [line.split("] ", 1)[1] for line in output.splitlines() if line.startswith("batchmark serve: [")]
    assert said[0].startswith("loading the model") and said[1].startswith("starting the engine"), said
    assert any(line.startswith("listening on") for line in said), said
    assert "Traceback" not in output and KEY[:12] not in output, output
