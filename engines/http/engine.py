"""An engine that drives any OpenAI-compatible server over HTTP, behind the one engine interface.

One `aiohttp.ClientSession` per engine: pooled keep-alive connections and a read buffer big enough
that long streams never stall on the client (aiohttp's 64 KiB default cut throughput ~10x at 50K-token
contexts). Per request:

- no `AdmitEvent`: the server cannot be seen admitting a request, so the record's admission time stays
  unknown and queueing delay, slowdown and the longest wait are n/a (harness/metrics/latency.py
  `admission_unseen`), not 0 (they were once the send time taken as admission).
- `TokenEvent`: one per output token, stamped with `time.perf_counter()` when the network read that
  carried it arrived. A chunk that carries several tokens (its `token_ids`, or a running usage total)
  gives several events with the same time. Without either, a chunk with content counts as one token.
  When the final usage says more tokens than were counted, the missing ones are added at the time of
  the last content chunk (they cannot have arrived later), so counts follow the server: re-counting
  chunks miscounts when one chunk carries several tokens. What usage may add is capped at the
  request's max_tokens (a server once claimed 3,000,000 tokens after streaming 116); the claim itself
  stays in the finish event, where run validity flags it.
  `token_id` is the server's id when it sends ids (`return_token_ids`), else -1: text is never
  re-tokenized to guess ids.
- Reasoning: a chunk whose delta (chat; the choice for completions) carries `reasoning_content` or
  `reasoning` text and no content gives reasoning tokens (`TokenEvent.reasoning`); with `think_tags`,
  content inside `<think>...</think>` does too (`engines.http.think`). A request's `reasoning_tokens` is
  sent as a body field of that name, which `batchmark serve` obeys and other servers ignore.
- `FinishEvent`: reason from the server's `finish_reason`; token counts from its usage when present.
  Every failure is typed (see `engines.http.errors`) and ends only its own request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from yarl import URL

from engines.api import (
    REPLICA_HEADER,
    SERVER_TIMING_FIELD,
    Engine,
    EngineEvent,
    FinishEvent,
    Request,
    SpecDecodeCounts,
    TokenEvent,
)
from engines.errors import EngineInputError
from engines.http.errors import (
    CONNECT,
    DISCONNECT,
    HTTP_STATUS,
    MALFORMED_EVENT,
    NOT_STREAMED,
    SERVER_ERROR,
    TIMEOUT,
    RequestFailure,
)
from engines.http.payload import (
    PATHS,
    Api,
    ChunkInfo,
    PromptFormat,
    ServerTiming,
    build_body,
    encode_body,
    endpoint_url,
    is_plain_token_chunk,
    prompt_text,
    read_chunk,
)
from engines.http.sse import SSEDecoder, SSEError
from engines.http.think import THINK_TAGS_MODES, ThinkTags, ThinkTagsMode
from engines.options import url_problem

log = logging.getLogger("batchmark.http")
DEFAULT_READ_BUFSIZE = 4 * 2**20  # >= 2 MiB: a 50K-token context's chunks never wait on the buffer
_FINISH_REASONS = {"length": "length", "stop": "stop", "abort": "abort"}


@dataclass(frozen=True)
class HttpEngineConfig:
    """Everything that configures an HTTP engine; `describe()` reports it, the URL without credentials."""

    url: str
    model: str
    api: Api = "completions"
    timeout_s: float = 600.0  # the whole request, first byte to last
    connect_timeout_s: float = 10.0  # the TCP (and TLS) connect only; waiting for a pooled slot is not counted
    read_timeout_s: float | None = None  # the longest silence between reads (a stall); None: only timeout_s
    connections: int = 256
    prompt_format: PromptFormat = "auto"  # auto: token ids for completions, text for chat
    include_usage: bool = True  # ask for stream_options.include_usage
    return_token_ids: bool = False  # ask for token ids in chunks (vLLM >= 0.10.2, batchmark serve)
    read_bufsize: int = DEFAULT_READ_BUFSIZE
    extra_body: dict[str, Any] = field(default_factory=dict)
    class_header: str | None = None  # the header that carries a request's SLO class (None: not sent)
    think_tags: ThinkTagsMode = "off"  # split <think>...</think> in the content as reasoning (engines/http/think.py)
    router: str | None = None  # the URL is a router with this policy (engines/fleet_names.py) ...
    replicas: int | None = None  # ... over this many replicas: what a fleet run measured, for its twin


class _Flight:
    """One request in flight: what `abort()` needs to stop it."""

    __slots__ = ("aborted", "awaiting", "task")

    def __init__(self, task: asyncio.Task | None) -> None:
        self.task = task
        self.aborted = False
        self.awaiting = False  # True while suspended on the network (not at a yield)


class _Aborted(Exception):
    pass


class HttpEngine(Engine):
    """Any OpenAI-compatible server behind the one engine interface: one streaming POST per request, typed failures."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api: Api = "completions",
        timeout_s: float = 600.0,
        connections: int = 256,
        tokenizer: Any | None = None,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float | None = None,
        api_key: str | None = None,
        prompt_format: PromptFormat = "auto",
        include_usage: bool = True,
        return_token_ids: bool = False,
        read_bufsize: int = DEFAULT_READ_BUFSIZE,
        extra_body: dict[str, Any] | None = None,
        class_header: str | None = None,
        think_tags: ThinkTagsMode = "off",
        router: str | None = None,
        replicas: int | None = None,
        name: str = "http",
    ) -> None:
        self.config = HttpEngineConfig(
            url,
            model,
            api,
            timeout_s,
            connect_timeout_s,
            read_timeout_s,
            connections,
            prompt_format,
            include_usage,
            return_token_ids,
            read_bufsize,
            dict(extra_body or {}),
            class_header,
            think_tags,
            router,
            replicas,
        )
        _validate(self.config)
        self.name = name
        self.tokenizer = tokenizer
        self._api_key = api_key
        self._endpoint = endpoint_url(url, api)
        self._target = URL(self._endpoint)  # parsed once, not per request
        self._chat = api == "chat"
        self._session: aiohttp.ClientSession | None = None
        self._flights: dict[str, _Flight] = {}
        self._ids_refused = False  # the server answered 400 to a token-id prompt and took text instead
        self.prefix_cache_reset: str | None = None  # what `start` got from POST /reset_prefix_cache
        # requests whose server timing (SERVER_TIMING_FIELD) was not seconds, so left out of their records, and
        # the first such value: the manifest's note (the field is ignored, never a failed request)
        self.server_timing_ignored = 0
        self._server_timing_problem: str | None = None

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        if self._session is not None:
            return
        c = self.config
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        timeout = aiohttp.ClientTimeout(total=c.timeout_s, sock_connect=c.connect_timeout_s, sock_read=c.read_timeout_s)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=c.connections, limit_per_host=c.connections),
            timeout=timeout,
            headers=headers,
            read_bufsize=c.read_bufsize,
            cookie_jar=aiohttp.DummyCookieJar(),  # a benchmark client keeps no cookies: less work per request
        )
        self.prefix_cache_reset = await self._reset_prefix_cache()

    async def _reset_prefix_cache(self) -> str:
        """Each engine run (each trial) starts with an empty prefix cache where the target can say so:
        `POST /reset_prefix_cache` at the server root (vLLM has it in its dev mode, `batchmark serve` always).
        Returns what happened, for the manifest: "reset", or why not."""
        assert self._session is not None
        parts = urlsplit(self.config.url)
        root = parts.path.split("/v1", 1)[0].rstrip("/")
        url = urlunsplit((parts.scheme, parts.netloc, root + "/reset_prefix_cache", "", ""))
        try:
            async with self._session.post(url, timeout=aiohttp.ClientTimeout(total=10.0)) as response:
                await response.read()
                return "reset" if response.status < 300 else f"not available (HTTP {response.status})"
        except (aiohttp.ClientError, TimeoutError) as exc:
            return f"not available ({type(exc).__name__})"

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- requests -------------------------------------------------------------------------
    async def abort(self, request_id: str) -> None:
        flight = self._flights.get(request_id)
        if flight is None or flight.aborted:
            return
        flight.aborted = True
        if flight.awaiting and flight.task is not None:
            flight.task.cancel()  # interrupts the network wait; turned into an abort finish below

    async def generate(self, request: Request) -> AsyncIterator[EngineEvent]:
        # One flat generator on purpose: every token passes through it, and each extra generator
        # layer costs about a microsecond per token on a small CPU.
        if self._session is None:
            raise RuntimeError("engine not started")
        rid = request.request_id
        flight = _Flight(asyncio.current_task())
        self._flights[rid] = flight
        think_tags = self.config.think_tags
        stream = _Stream(request, think=None if think_tags == "off" else ThinkTags(think_tags))
        fast = stream.think is None  # the fast path skips the text that think tags must read
        response: aiohttp.ClientResponse | None = None
        finish: FinishEvent | None = None
        chat = self._chat
        perf_counter = time.perf_counter
        try:
            response, t_sent = await self._open(request, flight)  # its send time is no admission time
            stream.responded = True
            stream.replica = response.headers.get(REPLICA_HEADER)  # behind a router: which replica answered
            if response.content_type == "application/json":
                raise RequestFailure(
                    NOT_STREAMED,
                    f"HTTP {response.status} with one JSON body, not an event "
                    "stream: the server ignored stream=true, so its tokens have no times",
                )
            if flight.aborted:
                raise _Aborted
            decoder = SSEDecoder()
            content = response.content
            while not stream.done:
                flight.task = asyncio.current_task()
                flight.awaiting = True
                try:
                    chunk = await content.readany()
                finally:
                    flight.awaiting = False
                now = perf_counter()
                for event in decoder.feed(chunk) if chunk else decoder.close():
                    data = event.data
                    if fast and is_plain_token_chunk(data, chat):
                        if not stream.count:
                            stream.first_token_time = now
                        stream.last_token_time = now
                        # a content token: tokens the usage adds later are on its channel, not a reasoning one's
                        stream.last_reasoning = False
                        stream.count += 1
                        yield TokenEvent(rid, -1, stream.count - 1, now)
                        if flight.aborted:
                            raise _Aborted
                        continue
                    if data == b"[DONE]":
                        stream.done = True
                        break
                    if event.event == "error":
                        raise RequestFailure(SERVER_ERROR, f"server error event: {data[:200]!r}")
                    for token in stream.apply(read_chunk(data, chat), now):
                        yield token
                        if flight.aborted:
                            raise _Aborted
                if not chunk and not stream.done:
                    if stream.finish_reason is None:
                        raise RequestFailure(
                            DISCONNECT, f"stream ended after {stream.count} tokens without [DONE] or a finish_reason"
                        )
                    break  # lenient: a finish_reason without [DONE] is a complete answer
            # hand the connection back before the last events, so a caller's next request can reuse it
            if content.is_eof():
                response.release()
            else:
                response.close()
            response = None
            for token in stream.reconcile():
                yield token
            stream.check_server_timing(t_sent)
            finish = stream.finish(stream.reason())
        except _Aborted:
            finish = stream.finish("abort")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not flight.aborted or task is None or task.uncancel() > 0:
                raise  # someone else cancelled the caller: not ours to swallow
            finish = stream.finish("abort")
        except RequestFailure as exc:
            finish = stream.finish("error", exc.error_type, str(exc))
        except TimeoutError as exc:
            finish = stream.finish("error", TIMEOUT, _timeout_message(exc, stream, self.config))
        except aiohttp.ClientConnectorError as exc:
            finish = stream.finish("error", CONNECT, f"cannot connect to {self._endpoint}: {exc.os_error or exc}")
        except SSEError as exc:
            finish = stream.finish("error", MALFORMED_EVENT, str(exc))
        except aiohttp.ClientResponseError as exc:  # the reply is not valid HTTP (bad status line, headers)
            finish = stream.finish("error", MALFORMED_EVENT, f"invalid HTTP response: {_describe(exc)}")
        except aiohttp.ClientError as exc:
            where = "mid-stream" if stream.responded else "before the response"
            message = f"connection lost {where} after {stream.count} tokens: {_describe(exc)}"
            finish = stream.finish("error", DISCONNECT, message)
        finally:
            self._flights.pop(rid, None)
            if stream.server_timing is not None and stream.server_timing.problem is not None:
                self._ignore_timing(stream.server_timing.problem)
            if response is not None:
                response.close()  # aborted or failed mid-stream: drop the connection, so the server sees it
        assert finish is not None
        yield finish

    def _ignore_timing(self, problem: str) -> None:
        self.server_timing_ignored += 1
        if self._server_timing_problem is None:
            self._server_timing_problem = problem
            log.warning(
                "%s: the server's timing ignored (%s); its requests' records leave server_ttft_s out",
                self.name,
                problem,
            )

    async def _open(self, request: Request, flight: _Flight) -> tuple[aiohttp.ClientResponse, float]:
        """POST the request; return a 2xx response and the send time, or raise a typed failure."""
        use_ids = self._use_ids(request)
        response, t_sent = await self._post(request, flight, use_ids)
        if response.status == 400 and use_ids and self._can_fall_back(request):
            response.close()
            response, t_sent = await self._post(request, flight, False)
            if response.status < 300:
                self._ids_refused = True  # the target takes text only: stop offering it ids
        if not 200 <= response.status < 300:
            raise RequestFailure(HTTP_STATUS, await _status_message(response, flight))
        return response, t_sent

    async def _post(self, request: Request, flight: _Flight, use_ids: bool) -> tuple[aiohttp.ClientResponse, float]:
        c = self.config
        body = build_body(
            request,
            api=c.api,
            model=c.model,
            use_ids=use_ids,
            tokenizer=self.tokenizer,
            include_usage=c.include_usage,
            return_token_ids=c.return_token_ids,
            extra=c.extra_body,
        )
        data = encode_body(body)
        assert self._session is not None
        flight.task = asyncio.current_task()
        flight.awaiting = True
        t_sent = time.perf_counter()
        try:
            header = c.class_header
            if header and request.slo_class is not None:
                response = await self._session.post(self._target, data=data, headers={header: request.slo_class})
            else:
                response = await self._session.post(self._target, data=data)
        finally:
            flight.awaiting = False
        return response, t_sent

    def _use_ids(self, request: Request) -> bool:
        fmt = self.config.prompt_format
        if self._chat or fmt == "text":
            return False
        if fmt == "ids":
            return True
        return not (self._ids_refused and self._can_fall_back(request))

    def _can_fall_back(self, request: Request) -> bool:
        return self.config.prompt_format == "auto" and prompt_text(request, self.tokenizer) is not None

    # -- manifest -------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        options = asdict(self.config)
        options["url"] = _redact(self.config.url)
        options["endpoint"] = _redact(self._endpoint)
        options["api_key_set"] = bool(self._api_key)  # never the key itself
        options["prompts_as_text_after_fallback"] = self._ids_refused
        ignored = None
        if self.server_timing_ignored:
            ignored = {"requests": self.server_timing_ignored, "first": self._server_timing_problem}
        return {
            "name": self.name,
            "kind": "http",
            "options": options,
            "prefix_cache_reset": self.prefix_cache_reset,
            "server_timing_ignored": ignored,
        }


@dataclass(slots=True)
class _Stream:
    """What one response has said so far."""

    request: Request
    count: int = 0
    responded: bool = False
    done: bool = False
    finish_reason: str | None = None
    usage_prompt: int | None = None
    usage_completion: int | None = None
    usage_cached: int | None = None
    spec_decode: SpecDecodeCounts | None = None
    server_timing: ServerTiming | None = None  # the server's own timing of the request (a checked value)
    replica: str | None = None  # the answering server's name (`batchmark serve --replica-id`), if it said one
    first_token_time: float | None = None
    last_token_time: float | None = None
    think: ThinkTags | None = None
    last_reasoning: bool = False  # the channel of the last token: tokens usage adds later are on it

    @property
    def request_id(self) -> str:
        return self.request.request_id

    def apply(self, info: ChunkInfo, now: float) -> list[TokenEvent]:
        """Take in one parsed chunk; return its tokens as events."""
        n = info.tokens
        if info.usage_completion is not None:
            self.usage_completion = info.usage_completion
            if info.cumulative:
                n = max(0, min(info.usage_completion, self.request.max_tokens) - self.count)
        if info.usage_prompt is not None:
            self.usage_prompt = info.usage_prompt
        if info.usage_cached is not None:
            self.usage_cached = info.usage_cached
        if info.spec_decode is not None:
            self.spec_decode = info.spec_decode
        if info.server_timing is not None:
            self.server_timing = info.server_timing
        if info.finish_reason is not None:
            self.finish_reason = info.finish_reason
        reasoning = info.reasoning
        if self.think is not None and info.content and not reasoning:
            reasoning = self.think.feed(info.content)
        if not n:
            return []
        ids = info.token_ids
        base = self.count
        self.count = base + n
        if not base:
            self.first_token_time = now
        self.last_token_time = now
        self.last_reasoning = reasoning
        rid = self.request.request_id
        if ids is not None and len(ids) == n:
            return [TokenEvent(rid, int(ids[k]), base + k, now, reasoning) for k in range(n)]
        return [TokenEvent(rid, -1, base + k, now, reasoning) for k in range(n)]

    def check_server_timing(self, t_sent: float) -> None:
        """A server TTFT longer than the client's own from send to first token is not one (the server's span lies
        inside the client's, on any clocks that tick at one rate): ignored with the reason, as a bad value."""
        timing, first = self.server_timing, self.first_token_time
        if timing is None or timing.ttft_s is None or first is None or timing.ttft_s <= first - t_sent:
            return
        said, seen = timing.ttft_s, first - t_sent
        why = f"{SERVER_TIMING_FIELD}.ttft_s {said:.6f} s is longer than the client's {seen:.6f} s to its first token"
        self.server_timing = ServerTiming(None, None, why)

    def reconcile(self) -> list[TokenEvent]:
        """Tokens the usage numbers say were sent but no chunk counted (several tokens in one chunk)."""
        missing = min(self.usage_completion or 0, self.request.max_tokens) - self.count
        if missing <= 0:
            return []
        at = self.last_token_time if self.last_token_time is not None else time.perf_counter()
        events = [TokenEvent(self.request_id, -1, self.count + k, at, self.last_reasoning) for k in range(missing)]
        self.count += missing
        return events

    def reason(self) -> str:
        return _FINISH_REASONS.get(self.finish_reason or "stop", "stop")

    def finish(self, reason: str, error_type: str | None = None, message: str | None = None) -> FinishEvent:
        prompt = self.usage_prompt  # only what the server said: a guess would pass the prompt-length cross-check
        output = self.usage_completion if self.usage_completion is not None and reason != "error" else self.count
        timing = self.server_timing
        return FinishEvent(
            self.request_id,
            reason,
            prompt,
            output,
            time.perf_counter(),  # type: ignore[arg-type]
            error_type=error_type,
            error_message=message,
            preemptions=None,  # not in a server's responses: unknown, not 0 (the scrape counts them)
            cached_tokens=self.usage_cached,
            spec_decode=self.spec_decode,
            replica_id=self.replica,
            server_ttft_s=None if timing is None else timing.ttft_s,
            server_queue_s=None if timing is None else timing.queue_s,
        )


async def _status_message(response: aiohttp.ClientResponse, flight: _Flight) -> str:
    detail = ""
    try:
        flight.task = asyncio.current_task()
        flight.awaiting = True
        raw = await response.content.read(4096)
        flight.awaiting = False
        try:
            obj = json.loads(raw)
            error = obj.get("error", obj) if isinstance(obj, dict) else obj
            detail = str(error.get("message", error)) if isinstance(error, dict) else str(error)
        except ValueError:
            detail = raw.decode("utf-8", "replace").strip()
    except (aiohttp.ClientError, TimeoutError):
        detail = "(no body)"
    finally:
        flight.awaiting = False
        response.close()
    retry = response.headers.get("Retry-After")
    suffix = f" (Retry-After: {retry})" if retry else ""
    return f"HTTP {response.status} {response.reason or ''}".rstrip() + f": {detail[:300]}{suffix}"


def _timeout_message(exc: TimeoutError, stream: _Stream, c: HttpEngineConfig) -> str:
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return f"connect timed out after {c.connect_timeout_s} s"
    if isinstance(exc, aiohttp.SocketTimeoutError):
        where = "mid-stream" if stream.count else "waiting for the first byte"
        return f"no data for {c.read_timeout_s} s {where} (after {stream.count} tokens)"
    return f"request exceeded timeout_s={c.timeout_s} after {stream.count} tokens"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _safe(url: str) -> str:
    """`_redact`, or the URL's scheme and host part cut short when it does not even parse."""
    try:
        return _redact(url)
    except ValueError:
        return url.split("@")[-1][:80]


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


def _validate(c: HttpEngineConfig) -> None:
    problem = url_problem(c.url)
    if problem is not None:
        raise EngineInputError(f"--url {_safe(c.url)!r}: {problem}")
    if c.api not in PATHS:
        raise EngineInputError(f"--api {c.api!r}: expected one of {', '.join(PATHS)}")
    if c.prompt_format not in ("auto", "ids", "text"):
        raise EngineInputError(f"prompt_format {c.prompt_format!r}: expected auto, ids or text")
    if c.think_tags not in THINK_TAGS_MODES:
        raise EngineInputError(f"think_tags {c.think_tags!r}: expected {', '.join(THINK_TAGS_MODES)}")
    if not c.model:
        raise EngineInputError("--model: the HTTP engine needs the served model name")
    for name in ("timeout_s", "connect_timeout_s"):
        if not getattr(c, name) > 0:
            raise EngineInputError(f"{name}={getattr(c, name)}: must be > 0")
    if c.read_timeout_s is not None and not c.read_timeout_s > 0:
        raise EngineInputError(f"read_timeout_s={c.read_timeout_s}: must be > 0")
    if c.connections < 1:
        raise EngineInputError(f"connections={c.connections}: must be >= 1")
    if c.read_bufsize < 2**21:
        raise EngineInputError(f"read_bufsize={c.read_bufsize}: must be >= 2 MiB for long contexts")
