"""The server option table of `batchmark serve`: each limit of the HTTP server, stated once.

Rows are `Option`s (engines/options.py), as the engine option table's are: a name (with dashes, the flag), a
type, a default, a help text and the range it must lie in. `batchmark serve` builds its flags from this table
and checks them with it before the model loads (harness/cli/serve.py), the server's own defaults are these
(engines/serve/state.py), and the zero-delay server takes its read deadline from the same row
(engines/serve/zero_server.py). It lives outside `engines/serve/` so that building the command line loads no
aiohttp. docs/http.md names each flag with its default; tests/http/test_keepalive_timeout.py checks they agree.
"""

from __future__ import annotations

from engines.errors import EngineInputError
from engines.options import Option

_SERVER = ()  # the rows configure the server, not an engine kind

SERVER_OPTIONS: tuple[Option, ...] = (
    Option(
        "max_waiting", int, 1024, "requests queued for the engine before new ones get 429", _SERVER, low=1, metavar="N"
    ),
    # a 50K-token prompt as JSON ids is ~0.4 MB; text is smaller
    Option("max_body_mb", float, 32.0, "largest request body in MiB", _SERVER, low=0, above=True, metavar="MB"),
    Option("default_max_tokens", int, 16, "max_tokens when a request omits it", _SERVER, low=1, metavar="N"),
    Option(
        "drain_timeout",
        float,
        30.0,
        "seconds to let running requests finish on SIGTERM/SIGINT",
        _SERVER,
        low=0,
        metavar="S",
    ),
    Option(
        "request_read_timeout",
        float,
        30.0,
        "seconds from a request's first byte to its last body byte; a slower sender gets 408 and its connection closed",
        _SERVER,
        low=0,
        above=True,
        metavar="S",
    ),
    # aiohttp's run_app default; a bare AppRunner would keep an idle connection 3630 s
    Option(
        "keepalive_timeout",
        float,
        75.0,
        "seconds an idle keep-alive connection (before its first request or between requests) stays open",
        _SERVER,
        low=0,
        above=True,
        metavar="S",
    ),
)

SERVER_OPTION: dict[str, Option] = {option.name: option for option in SERVER_OPTIONS}


def check_replica_id(name: str) -> str:
    """`--replica-id` of `batchmark serve` and the zero-delay server: the value of every completion's
    `x-batchmark-replica` header (engines/api.py `REPLICA_HEADER`), so printable ASCII and not blank."""
    if not name.strip() or not (name.isascii() and name.isprintable()):
        raise EngineInputError(f"--replica-id {name!r}: must be printable ASCII and not empty (a header value)")
    return name
