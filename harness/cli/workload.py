"""`batchmark workload ...`: inspect workloads (presets, spec files, trace files) without running anything.

`workload describe NAME|FILE` prints the request count, span, rates, length percentiles, tenants and the
fingerprint. `workload convert-weka SRC OUT` writes WEKA agentic-coding traces as a session file
(what it infers: workloads/readers/weka.py). The workloads package is imported inside the run functions so
`batchmark --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.cli import args as shared


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("workload", help="inspect workloads: presets, spec files and traces")
    commands = parser.add_subparsers(dest="workload_command", required=True, metavar="SUBCOMMAND")

    describe = commands.add_parser("describe", help="statistics and fingerprint of a workload")
    describe.add_argument("source", metavar="NAME|FILE", help="a preset, a .toml spec or a trace file")
    describe.add_argument("--json", action="store_true", help="print JSON instead of a table")
    shared.add_workload_flags(describe)
    describe.set_defaults(run=run_describe)

    listing = commands.add_parser("list", help="list the presets")
    listing.set_defaults(run=run_list)

    weka = commands.add_parser("convert-weka", help="WEKA agentic-coding traces to a session file")
    weka.add_argument("source", metavar="SRC", help="a trace .json, a directory of them, or JSON lines of them")
    weka.add_argument("out", metavar="OUT", help="the session file to write (.jsonl, or .jsonl.gz compressed)")
    weka.add_argument("--rate", type=float, default=0.05, help="session starts per second (Poisson; default 0.05)")
    weka.add_argument("--seed", type=int, default=0, help="seed of the session starts (default 0)")
    weka.set_defaults(run=run_convert_weka)


def format_text(d: dict[str, Any]) -> str:
    def num(value: Any, unit: str = "") -> str:
        if value is None:
            return "n/a"
        text = f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"
        return text + unit

    def lengths(s: dict[str, Any]) -> str:
        return (
            f"p50 {num(s['p50'])}  p90 {num(s['p90'])}  p99 {num(s['p99'])}  max {num(s['max'])}  "
            f"(min {num(s['min'])}, mean {num(s['mean'])})"
        )

    rows = [
        ("workload", d["name"]),
        ("requests", num(d["requests"])),
        ("span", num(d["span_s"], " s")),
        ("mean rate", num(d["mean_rate_rps"], " req/s")),
        ("inter-arrival CV", num(d["interarrival_cv"])),
        ("peak 1 s", num(d["peak_1s_requests"], " requests")),
        ("input tokens", lengths(d["input_tokens"])),
        ("output tokens", lengths(d["output_tokens"])),
        ("tenants", ", ".join(f"{k} ({v['requests']}, priority {v['priority']})" for k, v in d["tenants"].items())),
    ]
    if "reasoning_tokens" in d:
        exhausts = f"; {num(d['reasoning_exhausts'])} requests all reasoning (no room for an answer)"
        rows.insert(8, ("reasoning tokens", lengths(d["reasoning_tokens"]) + exhausts))
    if "agentic" in d:
        a = d["agentic"]
        tool = a["tool_s"]
        rows.append(
            (
                "agentic",
                f"{num(a['jobs'])} jobs; {num(a['fanned_out_turns'])} of {num(a['later_turns'])} "
                f"later turns fan out (up to {num(a['branches_max'])} branches)"
                + (
                    ""
                    if tool is None
                    else f"; tool time p50 {num(tool['p50'], ' s')}  p90 "
                    f"{num(tool['p90'], ' s')}  max {num(tool['max'], ' s')}"
                ),
            )
        )
        per, think = a["turns_per_job"], a["think_s"]
        rows.append(
            (
                "agentic turns",
                f"per job p50 {num(per['p50'])}  p90 {num(per['p90'])}  max {num(per['max'])}"
                + (
                    ""
                    if think is None
                    else f"; think time p50 {num(think['p50'], ' s')}  p90 "
                    f"{num(think['p90'], ' s')}  max {num(think['max'], ' s')}"
                )
                + (f"; {num(a['fresh_turns'])} start a fresh context" if a["fresh_turns"] else ""),
            )
        )
    if d["closed_loop_users"] is not None:
        rows.append(("closed loop", f"{d['closed_loop_users']} users, think time {num(d['think_time_s'], ' s')}"))
    if d["prefix_blocks"]:
        p = d["prefix_blocks"]
        rows.append(
            (
                "prefix blocks",
                f"{num(p['total'])} total, {num(p['unique'])} unique, "
                f"reuse {num(p['reuse_fraction'])} ({p['block_tokens']} tokens each)",
            )
        )
    rows += [("seed", str(d["seed"])), ("fingerprint", d["fingerprint"])]
    rows += [("note", note) for note in d["notes"]]
    return "\n".join(f"{key:<17} {value}" for key, value in rows)


def run_describe(args: argparse.Namespace) -> int:
    from workloads import load_workload

    workload = load_workload(args.source, **shared.workload_overrides(args))
    description = workload.describe()
    print(json.dumps(description, indent=2) if args.json else format_text(description))
    return 0


def run_convert_weka(args: argparse.Namespace) -> int:
    import gzip
    from pathlib import Path

    from workloads.readers.weka import read_weka, session_lines

    if not 0 < args.rate <= 1e6:
        raise SystemExit(f"--rate: expected session starts per second in (0, 1e6], found {args.rate}")
    turns, facts = read_weka(Path(args.source), args.source, args.rate, args.seed)
    data = ("\n".join(session_lines(turns)) + "\n").encode()
    out = Path(args.out)
    # mtime 0: the same traces give the same bytes, so a bundled file's sha256 reproduces
    out.write_bytes(gzip.compress(data, 9, mtime=0) if out.suffix == ".gz" else data)
    print(f"{len({t.session for t in turns}):,} sessions, {len(turns):,} requests written to {out}")
    for key, value in vars(facts).items():
        print(f"{key.replace('_', ' '):<22} {value:,}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from workloads import list_presets
    from workloads.presets import preset_description

    for name in list_presets():
        print(f"{name:<20} {preset_description(name)}")
    return 0
