"""`batchmark probe URL`: a black-box test of whether an endpoint batches continuously."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli import args as shared

PROBE_FLAGS: tuple[shared.Flag, ...] = (
    shared.Flag("--rounds", int, "rounds of long and short requests", default=3, low=1, high=1000, metavar="N"),
    shared.Flag("--long-requests", int, "long generations per round", default=2, low=1, high=1024, metavar="N"),
    shared.Flag("--long-tokens", int, "their output length", default=128, low=1, high=1_000_000, metavar="N"),
    shared.Flag("--short-requests", int, "short requests per round", default=4, low=1, high=1024, metavar="N"),
    shared.Flag("--short-tokens", int, "their output length", default=8, low=1, high=1_000_000, metavar="N"),
    shared.Flag("--warmup-tokens", int, "long tokens seen before the short requests", default=8, low=1, metavar="N"),
    shared.Flag("--timeout", float, "per-request timeout in seconds", default=300.0, low=0, above=True, metavar="S"),
)


def register(sub: argparse._SubParsersAction) -> None:
    probe = sub.add_parser("probe", help="tell whether an OpenAI-compatible endpoint batches continuously")
    probe.add_argument("url", help="server base URL, e.g. http://127.0.0.1:8000")
    probe.add_argument("--model", help="model name to request (default: the first one /v1/models lists)")
    probe.add_argument("--api", default="completions", choices=["completions", "chat"])
    shared.add_flags(probe, PROBE_FLAGS)
    probe.add_argument("--api-key-env", help="environment variable holding the API key")
    probe.add_argument("--json", type=Path, help="also write the result here")
    probe.set_defaults(run=run_probe_command)


def run_probe_command(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from engines.options import url_problem
    from harness.errors import HarnessInputError
    from harness.probe import ProbeConfig, format_result, run_probe

    shared.check_flags(args, PROBE_FLAGS)
    if (problem := url_problem(args.url)) is not None:
        raise HarnessInputError(f"probe {args.url}: {problem}")
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise HarnessInputError(f"--api-key-env {args.api_key_env}: the variable is not set")
    config = ProbeConfig(
        url=args.url,
        model=args.model,
        api=args.api,
        rounds=args.rounds,
        long_requests=args.long_requests,
        long_tokens=args.long_tokens,
        short_requests=args.short_requests,
        short_tokens=args.short_tokens,
        warmup_tokens=args.warmup_tokens,
        timeout_s=args.timeout,
        api_key=api_key,
    )
    result = asyncio.run(run_probe(config))
    print(format_result(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.to_json(), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
