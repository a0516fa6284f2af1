"""`batchmark bench engines`: the engine comparison table (raw ceiling, static, continuous)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engines.options import OPTIONS
from harness.cli import args as shared

STEP_TOKENS = OPTIONS["max_batched_tokens"]


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="offline engine benchmarks")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True, metavar="WHAT")
    engines = bench_sub.add_parser("engines", help="raw loop vs static vs continuous on one offline workload")
    shared.add_model_flags(engines)
    engines.add_argument("--requests", type=int, default=256)
    engines.add_argument("--prompt-len", type=int, default=64)
    engines.add_argument("--min-output", type=int, default=8)
    engines.add_argument("--max-output", type=int, default=128)
    batch = OPTIONS["max_running"].default
    engines.add_argument(
        "--batch", type=int, default=batch, help=f"static max batch = continuous max running (default {batch})"
    )
    engines.add_argument(
        "--max-batched-tokens",
        type=int,
        default=STEP_TOKENS.default_for("offline"),
        help=f"continuous: tokens per step (default {STEP_TOKENS.default_for('offline')}, the offline profile)",
    )
    engines.add_argument("--repeat", type=int, default=1, help="runs; the table shows medians")
    engines.add_argument("--seed", type=int, default=0)
    engines.add_argument("--json", type=Path, help="also write the result as JSON here")
    engines.set_defaults(run=run_bench_engines)


def run_bench_engines(args: argparse.Namespace) -> int:
    from harness.errors import HarnessInputError

    if args.requests < 1 or args.prompt_len < 1 or not 1 <= args.min_output <= args.max_output:
        raise HarnessInputError("--requests, --prompt-len must be >= 1 and 1 <= --min-output <= --max-output")
    if args.batch < 1 or args.repeat < 1 or args.max_batched_tokens < 1:
        raise HarnessInputError("--batch, --repeat and --max-batched-tokens must be >= 1")
    loaded = shared.load_model_from_args(args)
    from harness.bench_engines import OfflineWorkload, bench_engines, format_table  # torch: after the input checks

    workload = OfflineWorkload(args.requests, args.prompt_len, args.min_output, args.max_output, args.seed)
    result = bench_engines(loaded, workload, args.batch, args.repeat, args.max_batched_tokens)
    print(format_table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
