"""`make_app`: the OpenAI-compatible aiohttp application around one engine.

Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health, GET /metrics,
GET /get_load (running and waiting requests, KV tokens in use: what a router's load monitor polls),
POST /reset_prefix_cache (outside /v1, where vLLM has it).
With `api_key`, every route but /health needs `Authorization: Bearer <key>`: /reset_prefix_cache changes
state and /metrics reveals it (`metrics_public=True` opens /metrics to scrapers that hold no secret).
The key and any Authorization header are redacted from every log line (log_redact.py).
"""

from __future__ import annotations

import hmac
import logging
from pathlib import Path
from typing import Any

from aiohttp import web

from engines.api import Engine
from engines.serve import handlers, log_redact
from engines.serve.errors import ApiError, RequestReadTimeout
from engines.serve.state import (
    DEFAULT_DRAIN_TIMEOUT_S,
    DEFAULT_KEEPALIVE_TIMEOUT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_WAITING,
    DEFAULT_REQUEST_READ_TIMEOUT_S,
    STATE,
    ServerState,
)
from engines.serve.step_trace import StepTrace
from engines.step_record import StepRecord

log = logging.getLogger("batchmark.serve")
# what a load balancer's probe must reach without a secret; every other route needs the key when one is set
PUBLIC_PATHS = frozenset({"/health"})
PUBLIC: web.AppKey[frozenset[str]] = web.AppKey("public_paths", frozenset)
TRACE: web.AppKey[StepTrace | None] = web.AppKey("step_trace")


def make_app(
    engine: Engine,
    tokenizer: Any,
    model_name: str,
    *,
    api_key: str | None = None,
    max_waiting: int = DEFAULT_MAX_WAITING,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    drain_timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S,
    request_read_timeout_s: float | None = DEFAULT_REQUEST_READ_TIMEOUT_S,
    keepalive_timeout_s: float = DEFAULT_KEEPALIVE_TIMEOUT_S,
    manage_engine: bool = True,
    metrics_public: bool = False,
    replica_id: str | None = None,
    step_trace: Path | None = None,
) -> web.Application:
    state = ServerState(
        engine,
        tokenizer,
        model_name,
        api_key=api_key,
        max_waiting=max_waiting,
        max_body_bytes=max_body_bytes,
        default_max_tokens=default_max_tokens,
        drain_timeout_s=drain_timeout_s,
        request_read_timeout_s=request_read_timeout_s,
        keepalive_timeout_s=keepalive_timeout_s,
        manage_engine=manage_engine,
        replica_id=replica_id,
    )
    _wire_engine_gauges(state)
    # aiohttp's own limit stops a body that lies about (or omits) its length; a 413 either way.
    app = web.Application(client_max_size=max_body_bytes, middlewares=[_errors, _auth])
    app[STATE] = state
    app[TRACE] = StepTrace(step_trace) if step_trace is not None else None
    app[PUBLIC] = PUBLIC_PATHS | ({"/metrics"} if metrics_public else set())
    log_redact.install([api_key] if api_key else [])
    app.router.add_post("/v1/completions", handlers.completions)
    app.router.add_post("/v1/chat/completions", handlers.chat_completions)
    app.router.add_get("/v1/models", handlers.models)
    app.router.add_get("/health", handlers.health)
    app.router.add_get("/metrics", handlers.metrics)
    app.router.add_get("/get_load", handlers.get_load)  # what vllm-router's power_of_two polls
    app.router.add_post("/reset_prefix_cache", handlers.reset_prefix_cache)
    app.on_startup.append(_start_engine)
    app.on_shutdown.append(_drain)
    app.on_cleanup.append(_stop_engine)
    return app


def begin_shutdown(app: web.Application) -> None:
    """From now on new generation requests get 503; those in flight run to completion."""
    app[STATE].draining = True


async def drain(app: web.Application, timeout_s: float | None = None) -> bool:
    """Stop taking requests and wait for those in flight; False if some were still running at the timeout."""
    state = app[STATE]
    begin_shutdown(app)
    return await state.wait_idle(state.drain_timeout_s if timeout_s is None else timeout_s)


def _wire_engine_gauges(state: ServerState) -> None:
    engine: Any = state.engine  # an in-process engine has a KV pool to report; others have none
    if callable(getattr(engine, "kv_blocks_used", None)):
        state.metrics.kv_blocks_used = engine.kv_blocks_used
        state.metrics.kv_blocks_total = lambda: engine.num_blocks
        block_size = getattr(getattr(getattr(engine, "options", None), "kv", None), "block_size", None)
        if block_size:
            state.metrics.kv_tokens_used = lambda: engine.kv_blocks_used() * block_size


async def _start_engine(app: web.Application) -> None:
    state, trace = app[STATE], app[TRACE]
    if trace is None:
        state.engine.set_step_sink(state.metrics.on_step)
    else:

        def both(record: StepRecord) -> None:
            state.metrics.on_step(record)
            trace.write(record)

        state.engine.set_step_sink(both)
    if state.manage_engine:
        await state.engine.start()


async def _drain(app: web.Application) -> None:
    if not await drain(app):
        log.warning("drain timed out with %d requests in flight", app[STATE].in_flight)


async def _stop_engine(app: web.Application) -> None:
    state = app[STATE]
    state.prompts.close()
    state.engine.set_step_sink(None)
    if state.manage_engine:
        await state.engine.stop()
    if app[TRACE] is not None:
        app[TRACE].close()


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    state = request.app[STATE]
    try:
        return await handler(request)
    except ApiError as exc:
        state.metrics.rejected[exc.status] = state.metrics.rejected.get(exc.status, 0) + 1
        return exc.response()
    except RequestReadTimeout as exc:  # the body did not arrive within the read deadline (chunk_guard.py)
        state.metrics.rejected[408] = state.metrics.rejected.get(408, 0) + 1
        error = ApiError(408, f"{request.method} {request.path}: {exc}", code="request_timeout")
        error.headers["Connection"] = "close"
        return error.response()
    except web.HTTPException as exc:  # aiohttp's own 404, 405, 413: same JSON shape as ours
        if exc.status < 400:
            raise
        state.metrics.rejected[exc.status] = state.metrics.rejected.get(exc.status, 0) + 1
        message = f"{request.method} {request.path}: {exc.reason}"
        return ApiError(exc.status, message, code=exc.reason.lower().replace(" ", "_")).response()


@web.middleware
async def _auth(request: web.Request, handler: Any) -> web.StreamResponse:
    key = request.app[STATE].api_key
    if key and request.path not in request.app[PUBLIC]:
        scheme, _, given = request.headers.get("Authorization", "").strip().partition(" ")
        # the scheme is case-insensitive (RFC 9110 section 11.1): "bearer KEY" is as good as "Bearer KEY"
        ok = scheme.lower() == "bearer" and hmac.compare_digest(_raw(given.strip()), _raw(key))
        if not ok:
            raise ApiError(401, "missing or invalid API key (Authorization: Bearer <key>)", code="invalid_api_key")
    return await handler(request)


def _raw(text: str) -> bytes:
    # aiohttp decodes header bytes that are not UTF-8 with surrogateescape: encode them back the same way
    return text.encode("utf-8", "surrogateescape")
