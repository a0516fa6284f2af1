"""`batchmark serve`: the static or continuous engine behind an OpenAI-compatible HTTP API."""

from __future__ import annotations

import argparse
import sys

from harness.cmd_bench import add_model_arguments


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve an in-process engine over an OpenAI-compatible HTTP API")
    serve.add_argument("--engine", choices=["static", "continuous"], default="continuous")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port; 0 picks a free one (default 8000)")
    serve.add_argument("--served-model-name",
                       help="the model id clients send (default: --model as given, else 'batchmark')")  # fmt: skip
    serve.add_argument("--api-key", help="require Authorization: Bearer KEY on /v1 routes")
    serve.add_argument("--api-key-env", help="like --api-key, read from this environment variable (not shown by ps)")
    serve.add_argument("--max-batch", type=int, default=32, help="static: max batch size (default 32)")
    serve.add_argument("--batch-timeout-ms", "--batch-timeout", dest="batch_timeout_ms", type=float, default=50.0,
                       help="static: batch formation timeout in milliseconds (default 50)")  # fmt: skip
    serve.add_argument("--max-running", type=int, default=32, help="continuous: max running sequences (default 32)")
    serve.add_argument("--max-batched-tokens", type=int, default=2048,
                       help="continuous: token budget per step (default 2048)")  # fmt: skip
    serve.add_argument("--no-chunked-prefill", action="store_true", help="continuous: prefill prompts whole")
    serve.add_argument("--kv-memory-mb", type=float, default=256.0, help="KV cache budget in MiB (default 256)")
    serve.add_argument("--kv-blocks", type=int, help="exact number of KV blocks (overrides --kv-memory-mb)")
    serve.add_argument("--block-size", type=int, default=16, help="tokens per KV block (default 16)")
    serve.add_argument("--policy", default="fcfs", help="queue order: fcfs, sjf, priority, fair (default fcfs)")
    serve.add_argument("--max-waiting", type=int, default=1024,
                       help="requests queued for the engine before new ones get 429 (default 1024)")  # fmt: skip
    serve.add_argument("--max-body-mb", type=float, default=32.0, help="largest request body (default 32 MiB)")
    serve.add_argument("--default-max-tokens", type=int, default=16, help="max_tokens when a request omits it")
    serve.add_argument("--drain-timeout", type=float, default=30.0,
                       help="seconds to let running requests finish on SIGTERM/SIGINT (default 30)")  # fmt: skip
    add_model_arguments(serve)
    serve.set_defaults(run=run_serve)


def check_args(args: argparse.Namespace) -> None:
    from harness.errors import HarnessInputError

    if not 0 <= args.port <= 65535:
        raise HarnessInputError(f"--port {args.port}: must be 0..65535")
    for flag in ("max_batch", "max_running", "max_batched_tokens", "block_size", "max_waiting",
                 "default_max_tokens"):  # fmt: skip
        if getattr(args, flag) < 1:
            raise HarnessInputError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: must be >= 1")
    if args.kv_blocks is not None and args.kv_blocks < 1:
        raise HarnessInputError(f"--kv-blocks {args.kv_blocks}: must be >= 1")
    for flag in ("batch_timeout_ms", "drain_timeout"):
        if getattr(args, flag) < 0:
            raise HarnessInputError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: must be >= 0")
    if not args.kv_memory_mb > 0 or not args.max_body_mb > 0:
        raise HarnessInputError("--kv-memory-mb and --max-body-mb must be > 0")
    if args.api_key is not None and not args.api_key.strip():
        raise HarnessInputError("--api-key: must not be empty")
    if args.api_key_env is not None:
        import os

        if args.api_key is not None:
            raise HarnessInputError("--api-key and --api-key-env: give one")
        if not os.environ.get(args.api_key_env, "").strip():
            raise HarnessInputError(f"--api-key-env {args.api_key_env}: the variable is not set")
        args.api_key = os.environ[args.api_key_env].strip()


def engine_options(args: argparse.Namespace):  # -> EngineOptions
    from engines.inprocess import EngineOptions, KVConfig
    from engines.policy import make_policy
    from engines.scheduler import ContinuousConfig
    from engines.static_scheduler import StaticConfig

    make_policy(args.policy)  # an unknown policy is one line and exit 2, before the model loads
    return EngineOptions(
        kind=args.engine,
        policy=args.policy,
        kv=KVConfig(block_size=args.block_size, memory_mb=args.kv_memory_mb, blocks=args.kv_blocks),
        static=StaticConfig(max_batch_size=args.max_batch, batch_timeout_s=args.batch_timeout_ms / 1e3),
        continuous=ContinuousConfig(
            max_running=args.max_running,
            max_batched_tokens=args.max_batched_tokens,
            chunked_prefill=not args.no_chunked_prefill,
        ),
    )


def served_name(args: argparse.Namespace) -> str:
    # the same default as `batchmark run --engine http` (and vLLM): the --model path, else "batchmark"
    return args.served_model_name or args.model or "batchmark"


def run_serve(args: argparse.Namespace) -> int:
    import asyncio

    from engines.inprocess import InProcessEngine
    from engines.serve import make_app
    from engines.serve.runner import serve
    from harness.cmd_bench import load_model_from_args

    check_args(args)
    options = engine_options(args)
    loaded = load_model_from_args(args)
    engine = InProcessEngine(loaded, options, name=args.engine)
    name = served_name(args)
    app = make_app(
        engine, loaded.tokenizer, name, api_key=args.api_key, max_waiting=args.max_waiting,
        max_body_bytes=int(args.max_body_mb * 2**20), default_max_tokens=args.default_max_tokens,
        drain_timeout_s=args.drain_timeout,
    )  # fmt: skip

    def announce(line: str) -> None:
        print(f"batchmark serve: {line}", flush=True)

    announce(f"{args.engine} engine, model {name!r}, {engine.blocks.num_blocks} KV blocks")
    drained = asyncio.run(serve(app, args.host, args.port, announce=announce))
    announce("stopped" if drained else "stopped with requests still running")
    sys.stdout.flush()
    return 0
