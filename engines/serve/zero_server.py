"""A zero-delay OpenAI-compatible streaming server: every token exists the instant it is asked for.

It measures the client side (the HTTP engine, the load generator) with nothing else in the way, so
its own cost per request must be tiny: a bare asyncio protocol, no framework. With zero delay the
whole SSE stream of a request is one write; with `--token-delay-ms` the tokens are streamed as
chunked events that far apart. Responses honour `max_tokens` (default 16), `stream`,
`stream_options.include_usage`, `return_token_ids` and `reasoning_tokens` (the first r tokens as reasoning, as
`batchmark serve` streams them); token i has id 3 + i % 100 and text " t". A request whose bytes take longer than
`--request-read-timeout` to arrive (the same deadline and default as `batchmark serve`'s: read_deadline.py) gets
408 and its connection closes, once any stream being written on it has ended.
Like `batchmark serve`, every completion names its replica in the `x-batchmark-replica` header (`--replica-id`,
default HOST:PORT as bound) and carries the server's own timing in `batchmark_server_timing` (docs/http.md):
`ttft_s` from the request's last byte read to its first token written, `queue_s` to the start of its answer (a
pipelined request waits for the stream before it). So a client behind a router sees which replica served each
request, and its serving path (client TTFT - the server's) is the client's and the path's cost alone.
It exits on SIGTERM/SIGINT, or when the process that started it exits.

    python -m engines.serve.zero_server --port 0     # prints "listening on http://127.0.0.1:PORT"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from functools import lru_cache

from engines.api import REPLICA_HEADER, SERVER_TIMING_FIELD
from engines.errors import EngineInputError
from engines.serve.chunk_sizes import ChunkSizes
from engines.serve.read_deadline import ReadDeadline, timeout_answer
from engines.server_options import SERVER_OPTION, check_replica_id

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 2**20
DEFAULT_MAX_TOKENS: int = SERVER_OPTION["default_max_tokens"].default  # batchmark serve's
READ_TIMEOUT = SERVER_OPTION["request_read_timeout"]  # its flag, default and range


def _token_ids(n: int) -> list[int]:
    return [3 + i % 100 for i in range(n)]


def _chunk(
    chat: bool, text: str, ids: list[int] | None, finish: str | None, reasoning: bool = False, **extra: object
) -> bytes:
    key = "reasoning_content" if reasoning else "content"
    if chat:
        choice: dict = {"index": 0, "delta": {key: text} if text else {}, "finish_reason": finish}
    elif reasoning:
        choice = {"index": 0, "text": "", "reasoning_content": text, "finish_reason": finish}
    else:
        choice = {"index": 0, "text": text, "finish_reason": finish}
    if ids is not None:
        choice["token_ids"] = ids
    obj = {
        "id": "zero",
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": 0,
        "model": "zero",
        "choices": [choice],
        **extra,
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _usage(prompt: int, n: int, **extra: object) -> bytes:
    usage = {"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n}
    obj = {"id": "zero", "object": "text_completion", "created": 0, "model": "zero", "choices": [], "usage": usage}
    return b"data: " + json.dumps({**obj, **extra}, separators=(",", ":")).encode() + b"\n\n"


@lru_cache(maxsize=4096)
def _tokens(n: int, chat: bool, ids: bool, reasoning: int = 0) -> tuple[bytes, ...]:
    """A stream's token events, the same for every request of its shape (cached: the server must stay cheap)."""
    return tuple(_chunk(chat, " t", [t] if ids else None, None, i < reasoning) for i, t in enumerate(_token_ids(n)))


def _ending(n: int, chat: bool, ids: bool, usage_prompt: int | None, timing: dict[str, float]) -> tuple[bytes, ...]:
    """The finish chunk, the usage chunk if asked for and [DONE]; the last chunk before [DONE] carries the timing,
    where `batchmark serve` puts it."""
    said = {SERVER_TIMING_FIELD: timing}
    finish = _chunk(chat, "", [] if ids else None, "length", **({} if usage_prompt is not None else said))
    usage = () if usage_prompt is None else (_usage(usage_prompt, n, **said),)
    return (finish, *usage, b"data: [DONE]\n\n")


def _response(status: str, content_type: str, body: bytes, close: bool, headers: str = "") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{headers}"
        f"{'Connection: close' if close else 'Connection: keep-alive'}\r\n\r\n"
    )
    return head.encode() + body


def _json(status: str, obj: dict, close: bool = False, headers: str = "") -> bytes:
    return _response(status, "application/json", json.dumps(obj).encode(), close, headers)


def _error(status: str, message: str) -> bytes:
    return _json(status, {"error": {"message": message, "type": "invalid_request_error", "param": None}})


class ZeroProtocol(asyncio.Protocol):
    """One HTTP/1.1 connection of the zero-delay server, on a bare asyncio protocol."""

    def __init__(self, token_delay_s: float, read_timeout_s: float | None, replica_id: str) -> None:
        self.delay = token_delay_s
        self.replica_header = f"{REPLICA_HEADER}: {replica_id}\r\n"  # on every completion
        self.buf = b""
        # (bytes read in all, when) per read not yet answered: a request's arrival is the read that completed it
        self.reads: list[tuple[int, float]] = []
        self.consumed = 0  # bytes of the requests taken from `buf` so far
        self.transport: asyncio.Transport | None = None
        self.busy: asyncio.Task | None = None  # a delayed stream being written; later requests wait
        self.read_timeout_s = read_timeout_s  # None: no read deadline
        self.framing = ChunkSizes(MAX_BODY_BYTES)  # which request is arriving, for its deadline
        self.deadline: ReadDeadline | None = None
        self.timed_out = False  # a request did not arrive in time: nothing more is read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.read_timeout_s is not None:
            self.deadline = ReadDeadline(asyncio.get_running_loop(), self.read_timeout_s, self._read_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.busy is not None:
            self.busy.cancel()
        if self.deadline is not None:
            self.deadline.cancel()
        self.transport = None

    def data_received(self, data: bytes) -> None:
        if self.timed_out:
            return
        self.buf += data
        self.reads.append((self.consumed + len(self.buf), time.perf_counter()))
        if self.deadline is not None and not self.framing.stopped:
            self.framing.feed(data)  # it stops where this server refuses the request (chunked, too big) and closes
            self.deadline.watch(self.framing.receiving)
        if self.busy is None:
            self._process()

    def _read_timed_out(self) -> None:
        if self.transport is None:
            return
        self.timed_out = True
        if self.busy is None:  # nothing being answered: the 408, then the close
            assert self.deadline is not None
            self._close(timeout_answer(self.deadline.timeout_s))
        # else the stream being written ends, then the connection closes (_stream_slowly)

    def _process(self) -> None:
        while self.transport is not None and self.busy is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > MAX_HEADER_BYTES:
                    self._close(_error("431 Request Header Fields Too Large", "headers too large"))
                return
            head = self.buf[:end].decode("latin-1").split("\r\n")
            method, _, rest = head[0].partition(" ")
            path = rest.rpartition(" ")[0]
            length = 0
            close = False
            for line in head[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    if not value.strip().isdigit():
                        self._close(_error("400 Bad Request", "bad Content-Length"))
                        return
                    length = int(value)
                elif name == "connection":
                    close = value.strip().lower() == "close"
                elif name == "transfer-encoding":
                    self._close(_error("411 Length Required", "chunked request bodies are not supported"))
                    return
            if length > MAX_BODY_BYTES:
                self._close(_error("413 Payload Too Large", "body too large"))
                return
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            self.consumed += end + 4 + length
            self._handle(method, path, body, close, self._arrival())

    def _arrival(self) -> float:
        """When the request just taken (ending at `consumed`) was read whole; reads it needs no more are dropped."""
        arrived = next(t for total, t in self.reads if total >= self.consumed)
        self.reads = [(total, t) for total, t in self.reads if total > self.consumed]
        return arrived

    def _handle(self, method: str, path: str, body: bytes, close: bool, t_arrival: float) -> None:
        assert self.transport is not None
        t_answer = time.perf_counter()
        if method == "GET" and path in ("/health", "/v1/models"):
            obj = {"status": "ok"} if path == "/health" else {"object": "list", "data": [{"id": "zero"}]}
            self._send(_json("200 OK", obj, close), close)
            return
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            self._send(_error("404 Not Found", f"{method} {path}: not found"), close)
            return
        try:
            req = json.loads(body)
            n = int(req.get("max_tokens") or req.get("max_completion_tokens") or DEFAULT_MAX_TOKENS)
            reasoning = int(req.get("reasoning_tokens") or 0)
            want_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        except (ValueError, TypeError, AttributeError, RecursionError):  # RecursionError: `[` x 100000
            self._send(_error("400 Bad Request", "body: invalid JSON, max_tokens or stream_options"), close)
            return
        chat = path.endswith("chat/completions")
        prompt = req.get("prompt")
        prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt or req.get("messages", "")).split())
        ids = bool(req.get("return_token_ids"))
        n = max(n, 0)
        queue_s = max(0.0, t_answer - t_arrival)

        def timing() -> dict[str, float]:  # called as the first token goes out (none: at the finish)
            return {"ttft_s": max(0.0, time.perf_counter() - t_arrival), "queue_s": queue_s}

        if not req.get("stream"):
            text = " t" * n
            choice = {"index": 0, "finish_reason": "length"}
            choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
            whole = {"id": "zero", "choices": [choice], "usage": usage, SERVER_TIMING_FIELD: timing()}
            self._send(_json("200 OK", whole, close, self.replica_header), close)
            return
        tokens = _tokens(n, chat, ids, max(reasoning, 0))
        usage_prompt = prompt_tokens if want_usage else None
        if self.delay <= 0:
            events = (*tokens, *_ending(n, chat, ids, usage_prompt, timing()))
            self._send(_response("200 OK", "text/event-stream", b"".join(events), close, self.replica_header), close)
            return
        ending = (n, chat, ids, usage_prompt)
        self.busy = asyncio.get_running_loop().create_task(self._stream_slowly(tokens, ending, timing, close))

    async def _stream_slowly(
        self, tokens: tuple[bytes, ...], ending: tuple, timing: Callable[[], dict[str, float]], close: bool
    ) -> None:
        """The tokens `delay` apart; the finish, usage and [DONE] follow the last one at once."""
        transport = self.transport
        assert transport is not None
        transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n%s\r\n"
            % self.replica_header.encode()
        )
        said = timing() if not tokens else None
        for i, event in enumerate(tokens):
            if i:
                await asyncio.sleep(self.delay)
            transport.write(b"%x\r\n%s\r\n" % (len(event), event))
            said = said or timing()
        for event in _ending(*ending, said):
            transport.write(b"%x\r\n%s\r\n" % (len(event), event))
        transport.write(b"0\r\n\r\n")
        if close or self.timed_out:
            transport.close()
        self.busy = None
        self._process()

    def _send(self, data: bytes, close: bool) -> None:
        assert self.transport is not None
        self.transport.write(data)
        if close:
            self.transport.close()
            self.transport = None

    def _close(self, data: bytes) -> None:
        self._send(data, True)


async def start_zero_server(
    host: str = "127.0.0.1",
    port: int = 0,
    token_delay_s: float = 0.0,
    read_timeout_s: float | None = READ_TIMEOUT.default,
    replica_id: str | None = None,
) -> asyncio.Server:
    """The server listening; `read_timeout_s` None: no read deadline (to measure what it costs); `replica_id`
    None: HOST:PORT as bound, as `batchmark serve` names itself."""
    loop = asyncio.get_running_loop()
    names: list[str] = []  # the protocol reads the name at each connection, once the port is bound

    def protocol() -> ZeroProtocol:
        return ZeroProtocol(token_delay_s, read_timeout_s, names[0])

    server = await loop.create_server(protocol, host, port, backlog=4096)
    bound = server.sockets[0].getsockname()
    names.append(replica_id if replica_id is not None else f"{bound[0]}:{bound[1]}")
    return server


async def _main(args: argparse.Namespace, read_timeout_s: float) -> None:
    server = await start_zero_server(args.host, args.port, args.token_delay_ms / 1e3, read_timeout_s, args.replica_id)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    watchdog = asyncio.create_task(_exit_with_parent(stop))
    await stop.wait()
    watchdog.cancel()
    server.close()


async def _exit_with_parent(stop: asyncio.Event) -> None:
    """A benchmark's helper process must not outlive the benchmark that started it."""
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engines.serve.zero_server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--token-delay-ms", type=float, default=0.0, help="gap between streamed tokens")
    parser.add_argument(
        READ_TIMEOUT.flag_name, dest="read_timeout", metavar=READ_TIMEOUT.metavar, help=READ_TIMEOUT.help_text()
    )
    parser.add_argument(
        "--replica-id",
        metavar="NAME",
        help="every completion's x-batchmark-replica header (default: HOST:PORT as bound)",
    )
    args = parser.parse_args(argv)
    try:
        read_timeout_s = (
            READ_TIMEOUT.default if args.read_timeout is None else READ_TIMEOUT.check_flag(args.read_timeout)
        )
        if args.replica_id is not None:
            check_replica_id(args.replica_id)
    except EngineInputError as exc:  # one line, exit 2, before listening
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_main(args, read_timeout_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
