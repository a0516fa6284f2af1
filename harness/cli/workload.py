"""`batchmark workload ...`: inspect workloads (presets, spec files, trace files) without running anything.

`workload describe NAME|FILE` prints the request count, span, rates, length percentiles, tenants and the
fingerprint. The workloads package is imported inside the run functions so `batchmark --help` stays fast.
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
        rows.append(("agentic", f"{num(a['jobs'])} jobs; {num(a['fanned_out_turns'])} of {num(a['later_turns'])} "
                     f"later turns fan out (up to {num(a['branches_max'])} branches)"
                     + ("" if tool is None else f"; tool time p50 {num(tool['p50'], ' s')}  p90 "
                        f"{num(tool['p90'], ' s')}  max {num(tool['max'], ' s')}")))  # fmt: skip
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


def run_list(args: argparse.Namespace) -> int:
    from workloads import list_presets
    from workloads.presets import preset_description

    for name in list_presets():
        print(f"{name:<20} {preset_description(name)}")
    return 0
