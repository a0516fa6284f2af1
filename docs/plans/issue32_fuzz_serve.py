# ruff: noqa: E501  (a by-hand audit script: case tables one per line)
"""Fuzz a running `batchmark serve` (issue 32 audit): routes without the key, wrong keys, malformed requests,
chunk sizes, and clients hanging up mid-stream. Usage: `python docs/plans/issue32_fuzz_serve.py PORT KEY`, then
grep the server's stderr for the key and for Traceback (docs/measurements/2026-12-06-issue-32-audit.md)."""

import asyncio
import json
import socket
import sys
import time

import aiohttp

PORT = int(sys.argv[1])
KEY = sys.argv[2]


def raw(data: bytes, wait=3.0):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=wait)
    t = time.perf_counter()
    s.sendall(data)
    out = b""
    try:
        while c := s.recv(65536):
            out += c
            if b"\r\n\r\n" in out:
                break
    except Exception as e:
        out += f"<{type(e).__name__}>".encode()
    s.close()
    return out.split(b"\r\n")[0], round(time.perf_counter() - t, 2)


print("== routes without key")
for m, p in [
    ("GET", "/metrics"),
    ("HEAD", "/metrics"),
    ("GET", "/get_load"),
    ("HEAD", "/get_load"),
    ("POST", "/reset_prefix_cache"),
    ("GET", "/reset_prefix_cache"),
    ("OPTIONS", "/reset_prefix_cache"),
    ("POST", "/reset_prefix_cache/"),
    ("POST", "//reset_prefix_cache"),
    ("POST", "/%72eset_prefix_cache"),
    ("POST", "/health/../reset_prefix_cache"),
    ("GET", "/v1/models"),
    ("POST", "/v1/completions"),
    ("GET", "/health"),
    ("GET", "/health?x=1"),
    ("GET", "/HEALTH"),
    ("GET", "/health/"),
    ("DELETE", "/v1/models"),
    ("GET", "/nonexistent"),
]:
    print(m, p, raw(f"{m} {p} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()))
print("== wrong keys")
for h in [
    "Authorization: Bearer",
    "Authorization: Basic " + KEY,
    "Authorization: Bearer " + KEY + "x",
    "Authorization: Bearer " + KEY[:-1],
    "Authorization: bearer  " + KEY,
    "Authorization: Bearer " + KEY + "\r\nAuthorization: Bearer wrong",
]:
    print(
        repr(h[:40]),
        raw(
            f"POST /reset_prefix_cache HTTP/1.1\r\nHost: x\r\n{h}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode(
                "latin-1"
            )
        ),
    )
print("== malformed (new)")
mal = {
    "ctl byte 0x01": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\x01\r\n\r\n",
    "DEL in value": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\x7f\r\n\r\n",
    "tab before colon": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization\t: Bearer {KEY}\r\n\r\n",
    "key in header name": f"GET /v1/models HTTP/1.1\r\nHost: x\r\n{KEY} y: z\r\n\r\n",
    "lowercase auth + nul": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nauthorization: Bearer {KEY}\x00\r\n\r\n",
    "key in request target w/ nul": f"GET /v1/models?k={KEY}\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
    "huge header": f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}{'A' * 20000}\r\n\r\n",
    "LF only + nul": f"GET /v1/models HTTP/1.1\nHost: x\nAuthorization: Bearer {KEY}\x00\n\n",
    "bad version": f"GET /v1/models HTTP/9.9\r\nAuthorization: Bearer {KEY}\r\n\r\n",
    "two content-lengths": f"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcde",
    "CL + TE": f"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "negative CL": f"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nContent-Length: -1\r\n\r\n",
    "latin1 key byte": f"GET /v1/models HTTP/1.1\r\nAuthorization: Bearer {KEY}\xff\x00\r\n\r\n",
    "non-ascii key hdr": f"GET /v1/models HTTP/1.1\r\nProxy-Authorization: Bearer {KEY}\x00\r\n\r\n",
    "x-api-key header nul": f"GET /v1/models HTTP/1.1\r\nX-Api-Key: {KEY}\x00\r\n\r\n",
}
for k, v in mal.items():
    print(k, raw(v.encode("latin-1")))
print("== chunk sizes (new)")
H = f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nTransfer-Encoding: chunked\r\n\r\n"
for k, v in {
    "2^63": "8000000000000000\r\nab",
    "leading zeros 2^64-1": "0000000000ffffffffffffffff\r\nab",
    "extension": "ffffffffffff;x=1\r\nab",
    "uppercase": "FFFFFFFFFFFF\r\nab",
    "100 hex digits": "f" * 100 + "\r\nab",
    "limit+1 (8 MiB+1?)": "%x\r\nab" % (2**23 + 1),
    "negative": "-1\r\nab",
    "space padded": " ffffffffff\r\nab",
    "second chunk huge": "2\r\nab\r\nffffffffffffffff\r\nab",
}.items():
    print(k, raw((H + v).encode()))


async def disconnect():
    body = {"model": "batchmark", "prompt": "a b c", "max_tokens": 200, "ignore_eos": True, "stream": True}
    chat = {
        "model": "batchmark",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 200,
        "ignore_eos": True,
        "stream": True,
    }
    async with aiohttp.ClientSession() as s:
        for path, b in [("/v1/completions", body), ("/v1/chat/completions", chat)] * 3:
            async with s.post(
                f"http://127.0.0.1:{PORT}{path}", json=b, headers={"Authorization": f"Bearer {KEY}"}
            ) as r:
                print("stream", path, r.status)
                await r.content.readline()
    # non-stream disconnect: send request and close before reply
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", PORT))
        d = json.dumps({"model": "batchmark", "prompt": "a b", "max_tokens": 100, "ignore_eos": True}).encode()
        s.sendall(
            f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {len(d)}\r\n\r\n".encode()
            + d
        )
        time.sleep(0.1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    # half body then RST
    s = socket.create_connection(("127.0.0.1", PORT))
    s.sendall(
        f'POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Length: 100\r\n\r\n{{"a'.encode()
    )
    time.sleep(0.1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()
    # stream then RST mid-stream
    s = socket.create_connection(("127.0.0.1", PORT))
    d = json.dumps(
        {"model": "batchmark", "prompt": "a b", "max_tokens": 300, "ignore_eos": True, "stream": True}
    ).encode()
    s.sendall(
        f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {len(d)}\r\n\r\n".encode()
        + d
    )
    s.recv(1000)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()


asyncio.run(disconnect())
time.sleep(1)
print("health", raw(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
