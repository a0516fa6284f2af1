"""OpenAI-style JSON errors: `{"error": {"message", "type", "param", "code"}}` with the HTTP status."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "request_timeout",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "service_unavailable",
}


class ApiError(Exception):
    """An error answered as OpenAI's error JSON with its HTTP status (never a 500 for bad input)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        kind = _TYPES.get(self.status, "invalid_request_error" if self.status < 500 else "server_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}

    def response(self) -> web.Response:
        return web.json_response(self.body(), status=self.status, headers=self.headers, dumps=json.dumps)


class RequestReadTimeout(TimeoutError):
    """A request body not received within the server's read deadline: the payload's exception (chunk_guard.py).

    A TimeoutError, so that aiohttp's lingering read of a body its handler left unread ends quietly on it
    (web_protocol.py catches asyncio.TimeoutError there); a handler reading the body gets it, and the error
    middleware answers 408 `request_timeout`."""


def invalid(param: str, message: str) -> ApiError:
    """A 400 that names the offending field (`param`) in both the message and the `param` key."""
    return ApiError(400, f"{param}: {message}", param=param, code="invalid_value")
