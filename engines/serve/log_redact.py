"""Keep the API key out of the server log, and malformed requests to one line.

aiohttp's parser, refusing a request (a NUL byte, a bare CR, an obs-fold, `Authorization :`), logs the
exception with the raw header bytes in its message and a traceback: the key reached the log that way. A
filter on every logger the server writes to rewrites each record before any handler sees it: the key (in
any of the forms a message may quote it) and whatever follows an `Authorization` header name become
`<redacted>`, and a refused request or a client that went away is one line without a traceback.
"""

from __future__ import annotations

import logging
import re

from aiohttp.http_exceptions import HttpProcessingError

REDACTED = "<redacted>"
# what aiohttp and batchmark write to; a record is filtered on the logger it was made on, not on its parents
LOGGERS = ("aiohttp.server", "aiohttp.web", "aiohttp.access", "aiohttp.internal", "batchmark.serve")
# the header's value up to the end of the line or of the quoted bytes it sits in
_AUTHORIZATION = re.compile(r"(authorization\s*:)[^\r\n'\"]*", re.IGNORECASE)
# a bearer token quoted without its header name (aiohttp's "Got more than 8190 bytes when reading: b'Bearer ..."),
# the server's key or not: a wrong key may be the sender's secret elsewhere
_BEARER = re.compile(r"(\bbearer\s+)[^\s'\"]+", re.IGNORECASE)
# aiohttp cuts a quoted line at 100 bytes ("...'"): a long key's head is redacted from this many characters on
_HEAD_CHARS = 8


class Redact(logging.Filter):
    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        forms: set[str] = set()
        for secret in secrets:
            raw = secret.encode("utf-8", "surrogateescape")
            # as text, as Python writes it in a bytes repr (b'...\x00'), and as an escaped str repr
            forms |= {secret, repr(raw)[2:-1], repr(secret)[1:-1], raw.decode("latin-1")}
        self._forms = sorted((form for form in forms if form), key=len, reverse=True)

    def redact(self, text: str) -> str:
        for form in self._forms:
            text = _without(text, form)
        text = _BEARER.sub(rf"\1{REDACTED}", text)
        return _AUTHORIZATION.sub(rf"\1 {REDACTED}", text)

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        if isinstance(exc, HttpProcessingError | ConnectionResetError):
            # an ordinary event on a public port, not a fault of ours: one line, no traceback
            message = f"{message}: {type(exc).__name__}: {exc}"
            record.exc_info = None
            record.exc_text = None
        elif record.exc_info:
            message = f"{message}\n{logging.Formatter().formatException(record.exc_info)}"
            record.exc_info = None
            record.exc_text = None
        record.msg = self.redact(message)
        record.args = ()
        return True


def _without(text: str, secret: str) -> str:
    """`text` with every run that begins as `secret` does (its first _HEAD_CHARS characters, or all of a shorter
    one) redacted as far as it goes on matching: the whole key, or the head of one a message cut short."""
    head = secret[:_HEAD_CHARS]
    out, done = [], 0
    while (at := text.find(head, done)) != -1:
        end = at + len(head)
        while end - at < len(secret) and end < len(text) and text[end] == secret[end - at]:
            end += 1
        out += [text[done:at], REDACTED]
        done = end
    return "".join(out) + text[done:]


def install(secrets: list[str]) -> Redact:
    """Put one filter on every server logger (again on each call: the newest key set wins)."""
    redact = Redact(secrets)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, Redact)]:
            logger.removeFilter(old)
        logger.addFilter(redact)
    return redact
