"""What the server knows between requests: the engine, its tokenizer, limits, counters, draining."""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from engines.api import Engine
from engines.serve.prometheus import ServerMetrics
from engines.serve.prompts import PromptTokenizer
from engines.server_options import SERVER_OPTION

# the server option table's defaults (engines/server_options.py), in the units the server keeps
DEFAULT_MAX_WAITING: int = SERVER_OPTION["max_waiting"].default
DEFAULT_MAX_BODY_BYTES = int(SERVER_OPTION["max_body_mb"].default * 2**20)
DEFAULT_MAX_TOKENS: int = SERVER_OPTION["default_max_tokens"].default  # OpenAI's for completions; chat's too
DEFAULT_DRAIN_TIMEOUT_S: float = SERVER_OPTION["drain_timeout"].default
# from a request's first byte to its last body byte: a slow sender holds a connection no longer (chunk_guard.py)
DEFAULT_REQUEST_READ_TIMEOUT_S: float = SERVER_OPTION["request_read_timeout"].default
# an idle keep-alive connection, before its first request or between two, closes after this (runner.py)
DEFAULT_KEEPALIVE_TIMEOUT_S: float = SERVER_OPTION["keepalive_timeout"].default


@dataclass
class ServerState:
    """The server's engine, tokenizer, limits and counters, shared by the handlers."""

    engine: Engine
    tokenizer: Any
    model_name: str
    api_key: str | None = None
    max_waiting: int = DEFAULT_MAX_WAITING
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    retry_after_s: int = 1
    drain_timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S
    request_read_timeout_s: float | None = DEFAULT_REQUEST_READ_TIMEOUT_S  # None: no deadline (cost measurements)
    keepalive_timeout_s: float = DEFAULT_KEEPALIVE_TIMEOUT_S
    manage_engine: bool = True  # start the engine with the app and stop it on cleanup
    # the name every completion response carries (REPLICA_HEADER): which replica of a fleet served it. None until
    # the server is bound, when the runner names it host:port unless `--replica-id` did (engines/serve/runner.py)
    replica_id: str | None = None
    metrics: ServerMetrics = field(default_factory=ServerMetrics)
    prompts: PromptTokenizer = field(init=False)
    draining: bool = False
    in_flight: int = 0
    created: int = field(default_factory=lambda: int(time.time()))
    _ids: itertools.count = field(default_factory=itertools.count)
    _prefix: str = field(default_factory=lambda: secrets.token_hex(3))
    _idle: asyncio.Event | None = None
    _abandoned: asyncio.Event | None = None

    def __post_init__(self) -> None:
        self.prompts = PromptTokenizer(self.tokenizer, getattr(self.engine, "max_context", None))

    def new_id(self, kind: str) -> str:
        return f"{kind}-{self._prefix}-{next(self._ids)}"

    def enter(self) -> None:
        self.in_flight += 1
        if self._idle is not None:
            self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0 and self._idle is not None:
            self._idle.set()

    def abandon_drain(self) -> None:
        """Stop waiting for requests in flight (an operator's second signal): wait_idle returns False now."""
        if self._abandoned is None:
            self._abandoned = asyncio.Event()
        self._abandoned.set()

    @property
    def drain_abandoned(self) -> bool:
        return self._abandoned is not None and self._abandoned.is_set()

    async def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no request is in flight; False if `timeout_s` passed or the drain was abandoned first."""
        if self.in_flight == 0:
            return True
        if self._idle is None:
            self._idle = asyncio.Event()
        if self._abandoned is None:
            self._abandoned = asyncio.Event()
        if self._abandoned.is_set():
            return False
        idle = asyncio.ensure_future(self._idle.wait())
        abandoned = asyncio.ensure_future(self._abandoned.wait())
        await asyncio.wait((idle, abandoned), timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        idle.cancel()
        abandoned.cancel()
        return self.in_flight == 0


STATE: web.AppKey[ServerState] = web.AppKey("batchmark_state", ServerState)
