"""`batchmark probe URL`: a black-box test of whether an endpoint batches continuously."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    probe = sub.add_parser("probe", help="tell whether an OpenAI-compatible endpoint batches continuously")
    probe.add_argument("url", help="server base URL, e.g. http://127.0.0.1:8000")
    probe.add_argument("--model", help="model name to request (default: the first one /v1/models lists)")
    probe.add_argument("--api", default="completions", choices=["completions", "chat"])
    probe.add_argument("--rounds", type=int, default=3)
    probe.add_argument("--long-requests", type=int, default=2, help="long generations per round (default 2)")
    probe.add_argument("--long-tokens", type=int, default=128, help="their output length (default 128)")
    probe.add_argument("--short-requests", type=int, default=4, help="short requests per round (default 4)")
    probe.add_argument("--short-tokens", type=int, default=8, help="their output length (default 8)")
    probe.add_argument("--warmup-tokens", type=int, default=8, help="long tokens seen before the short requests")
    probe.add_argument("--timeout", type=float, default=300.0, help="per-request timeout in seconds")
    probe.add_argument("--api-key-env", help="environment variable holding the API key")
    probe.add_argument("--json", type=Path, help="also write the result here")
    probe.set_defaults(run=run_probe_command)


def run_probe_command(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from harness.errors import HarnessInputError
    from harness.probe import ProbeConfig, format_result, run_probe

    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise HarnessInputError(f"--api-key-env {args.api_key_env}: the variable is not set")
    config = ProbeConfig(
        url=args.url, model=args.model, api=args.api, rounds=args.rounds, long_requests=args.long_requests,
        long_tokens=args.long_tokens, short_requests=args.short_requests, short_tokens=args.short_tokens,
        warmup_tokens=args.warmup_tokens, timeout_s=args.timeout, api_key=api_key,
    )  # fmt: skip
    result = asyncio.run(run_probe(config))
    print(format_result(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.to_json(), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
