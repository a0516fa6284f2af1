"""The failure types the HTTP engine reports, one per way a request to a server can go wrong.

Each failure ends its request with `FinishEvent(reason="error", error_type=...)` and never the run.
"""

from __future__ import annotations

CONNECT = "connect"  # no connection: refused, unreachable, DNS, TLS
HTTP_STATUS = "http_status"  # the server answered with a non-2xx status (the message starts "HTTP <code>")
TIMEOUT = "timeout"  # connect, first byte, a silence between chunks, or the whole request took too long
DISCONNECT = "disconnect"  # the connection closed before the stream finished
MALFORMED_EVENT = "malformed_event"  # a chunk that is not valid SSE or not an OpenAI-shaped JSON object
SERVER_ERROR = "server_error"  # the stream itself carried an error object (vLLM does this mid-stream)
INVALID_REQUEST = "invalid_request"  # the request cannot be expressed for this API (e.g. chat without text)
# a 2xx answer that is one JSON body, not an event stream (the server ignored stream=true): it has no token
# timing, so TTFT and TPOT cannot be measured from it
NOT_STREAMED = "not_streamed"

ERROR_TYPES = (CONNECT, HTTP_STATUS, TIMEOUT, DISCONNECT, MALFORMED_EVENT, SERVER_ERROR, INVALID_REQUEST, NOT_STREAMED)


class RequestFailure(Exception):
    """Raised inside the engine to end one request with a typed error."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
