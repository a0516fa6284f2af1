"""`batchmark serve`: the static or continuous engine behind an OpenAI-compatible HTTP API."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engines.server_options import SERVER_OPTIONS, check_replica_id
from harness.cli import args as shared

if TYPE_CHECKING:  # commands load these late (torch), so `batchmark --help` starts fast
    from engines.engine_parts import EngineOptions

IN_PROCESS = ("static", "continuous")


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve an in-process engine over an OpenAI-compatible HTTP API")
    serve.add_argument("--engine", choices=IN_PROCESS, default="continuous")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port; 0 picks a free one (default 8000)")
    serve.add_argument(
        "--served-model-name", help="the model id clients send (default: --model as given, else 'batchmark')"
    )
    serve.add_argument(
        "--replica-id",
        metavar="NAME",
        help="the name every completion response carries in its x-batchmark-replica header, so that a client "
        "behind a router knows which replica served each request (default: HOST:PORT as bound)",
    )
    serve.add_argument(
        "--step-trace",
        type=Path,
        metavar="FILE",
        help="append every engine step's record to FILE (JSON lines, a run directory's step trace), to price "
        "the served engine's steps against a profile (docs/cluster.md)",
    )
    serve.add_argument("--api-key", help="require Authorization: Bearer KEY on every route but /health")
    serve.add_argument("--api-key-env", help="like --api-key, read from this environment variable (not shown by ps)")
    serve.add_argument(
        "--metrics-public", action="store_true", help="with a key: leave /metrics open to scrapers holding no key"
    )
    # the engine's options; `serve` keeps its own profile of defaults (engines/options.py says why)
    shared.add_engine_flags(serve, IN_PROCESS, profile="serve")
    # the server's limits: one flag per row of the server option table
    for o in SERVER_OPTIONS:
        serve.add_argument(o.flag_name, dest=o.name, metavar=o.metavar, help=o.help_text().replace("%", "%%"))
    shared.add_model_flags(serve)
    serve.set_defaults(run=run_serve)


def check_args(args: argparse.Namespace) -> None:
    """Every server flag and engine option checked before the model loads."""
    import os

    from harness.errors import HarnessInputError

    shared.engine_flag_values(args, IN_PROCESS)
    if not 0 <= args.port <= 65535:
        raise HarnessInputError(f"--port {args.port}: must be 0..65535")
    check_host(args.host, args.port)
    for o in SERVER_OPTIONS:  # each given value checked against its row; not given: the row's default
        given = getattr(args, o.name)
        setattr(args, o.name, o.default if given is None else o.check_flag(given))
    if args.replica_id is not None:
        check_replica_id(args.replica_id)
    if args.step_trace is not None:
        from harness.cli.args import writable_dir

        if args.step_trace.is_dir():
            raise HarnessInputError(f"--step-trace {args.step_trace}: is a directory; name the trace's file")
        writable_dir(args.step_trace.parent, "--step-trace")
    if args.api_key is not None and not args.api_key.strip():
        raise HarnessInputError("--api-key: must not be empty")
    if args.api_key_env is not None:
        if args.api_key is not None:
            raise HarnessInputError("--api-key and --api-key-env: give one")
        if not os.environ.get(args.api_key_env, "").strip():
            raise HarnessInputError(f"--api-key-env {args.api_key_env}: the variable is not set")
        args.api_key = os.environ[args.api_key_env].strip()


def check_host(host: str, port: int) -> None:
    """The interface must resolve to an address of this machine's kind: `--host 999.1.1.1` is one line."""
    import socket

    from harness.errors import HarnessInputError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        raise HarnessInputError(f"--host {host}: not an address to listen on ({reason})") from None
    with socket.socket(family, kind, proto) as probe:  # before the model loads: the address must be ours and free
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise HarnessInputError(f"--host {host} --port {port}: cannot listen ({exc.strerror or exc})") from None


def engine_options(args: argparse.Namespace) -> EngineOptions:
    from engines.options import in_process_options

    return in_process_options(args.engine, shared.engine_flag_values(args, IN_PROCESS), profile="serve")


def served_name(args: argparse.Namespace) -> str:
    # the same default as `batchmark run --engine http` (and vLLM): the --model path, else "batchmark"
    return args.served_model_name or args.model or "batchmark"


def run_serve(args: argparse.Namespace) -> int:
    import time

    started = time.perf_counter()

    def announce(line: str) -> None:
        # each step with the seconds since start: where a slow start goes is on the console (issue 32)
        print(f"batchmark serve: [{time.perf_counter() - started:5.1f} s] {line}", flush=True)

    check_args(args)
    options = engine_options(args)
    shared.check_model_flags(args)
    announce(f"loading the model ({args.model or 'embedded'})")
    import asyncio

    from engines.inprocess import InProcessEngine
    from engines.serve import make_app
    from engines.serve.runner import serve
    from harness.errors import HarnessInputError

    loaded = shared.load_model_from_args(args)
    if options.engine_process:
        from engines.engine_process import fork_worker

        # the worker is a copy of this process, the model already in it; else it is spawned and loads its own
        how = "forked with the model" if fork_worker(loaded) else "spawned: it loads the model again"
        announce(f"starting the engine: its worker process ({how}) and KV cache")
    else:
        announce("starting the engine: its KV cache")
    engine = InProcessEngine(loaded, options, name=args.engine)
    name = served_name(args)
    app = make_app(
        engine,
        loaded.tokenizer,
        name,
        api_key=args.api_key,
        max_waiting=args.max_waiting,
        max_body_bytes=int(args.max_body_mb * 2**20),
        default_max_tokens=args.default_max_tokens,
        drain_timeout_s=args.drain_timeout,
        request_read_timeout_s=args.request_read_timeout,
        keepalive_timeout_s=args.keepalive_timeout,
        metrics_public=args.metrics_public,
        replica_id=args.replica_id.strip() if args.replica_id else None,
        step_trace=args.step_trace,
    )

    announce(f"{args.engine} engine, model {name!r}, {engine.num_blocks} KV blocks")
    try:
        drained = asyncio.run(serve(app, args.host, args.port, announce=announce))
    except OSError as exc:  # the address is taken, or not this machine's
        what = exc.strerror or exc
        raise HarnessInputError(f"--host {args.host} --port {args.port}: cannot listen ({what})") from None
    announce("stopped" if drained else "stopped with requests still running")
    sys.stdout.flush()
    return 0
