"""`batchmark workload ...`: inspect workloads (presets, spec files, trace files) without running anything.

`workload describe NAME|FILE` prints the request count, span, rates, length percentiles, tenants and the
fingerprint. The workloads package is imported inside the run functions so `batchmark --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

# CLI flag -> load_workload override; every one defaults to None, meaning "not given".
OVERRIDE_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--seed", "seed", int, "seed for everything random (default: the spec's, else 0)"),
    ("--start", "start_s", float, "keep requests arriving from S seconds on (re-timed to start at 0)"),
    ("--duration", "duration_s", float, "keep S seconds of the trace; synthetic: generate S seconds"),
    ("--time-scale", "time_scale", float, "replay K times as fast (arrival times divided by K)"),
    ("--rate", "rate", float, "new mean rate R req/s over the same span, keeping the length mix"),
    ("--rate-cv", "rate_cv", float, "inter-arrival CV for --rate (default: the trace's own)"),
    ("--first", "first", int, "keep the first N requests"),
    ("--requests", "requests", int, "sample N requests from a trace; synthetic: generate N"),
    ("--max-context", "max_context", int, "clip input + output to N tokens (reported in the notes)"),
    ("--jitter-width", "jitter_width_s", float, "with --jitter: spread tied arrivals over at most S seconds"),
    ("--closed-loop-users", "closed_loop_users", int, "make it a closed loop of N users"),
    ("--think-time", "think_time_s", float, "closed-loop think time in seconds"),
    ("--format", "format", str, "trace format: auto, csv, jsonl, azure, burstgpt, mooncake, canonical-csv, ..."),
    ("--time-unit", "time_unit", str, "arrival unit of a generic trace: s, ms, us, ns or datetime"),
)

# The letters the help texts use; the flag list above stays (flag, dest, type, help) for other commands.
METAVARS = {
    "seed": "N", "start_s": "S", "duration_s": "S", "time_scale": "K", "rate": "R", "rate_cv": "CV", "first": "N",
    "requests": "N", "max_context": "N", "jitter_width_s": "S", "closed_loop_users": "N", "think_time_s": "S",
    "format": "FORMAT", "time_unit": "UNIT",
}  # fmt: skip


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("workload", help="inspect workloads: presets, spec files and traces")
    commands = parser.add_subparsers(dest="workload_command", required=True, metavar="SUBCOMMAND")

    describe = commands.add_parser("describe", help="statistics and fingerprint of a workload")
    describe.add_argument("source", metavar="NAME|FILE", help="a preset, a .toml spec or a trace file")
    describe.add_argument("--json", action="store_true", help="print JSON instead of a table")
    describe.add_argument("--jitter", action="store_true", help="spread requests that share a timestamp")
    describe.add_argument(
        "--columns",
        metavar="KEY=COL,...",
        help="column mapping for a generic CSV/JSONL, e.g. arrival=t,input_tokens=in,"
        "output_tokens=out[,tenant=user,priority=prio,prompt_text=text]",
    )
    for flag, dest, kind, text in OVERRIDE_FLAGS:
        describe.add_argument(flag, dest=dest, type=kind, default=None, help=text, metavar=METAVARS.get(dest))
    describe.set_defaults(run=run_describe)

    listing = commands.add_parser("list", help="list the presets")
    listing.set_defaults(run=run_list)


def parse_columns(text: str | None) -> dict[str, Any] | None:
    from workloads.errors import WorkloadError

    if text is None:
        return None
    mapping: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise WorkloadError(f"expected KEY=COLUMN pairs separated by commas, found {item!r}", field="columns")
        key, value = key.strip(), value.strip()
        if key == "tenant" and "tenant" in mapping:  # tenant may name several columns
            mapping["tenant"] = [
                *([mapping["tenant"]] if isinstance(mapping["tenant"], str) else mapping["tenant"]),
                value,
            ]
        else:
            mapping[key] = value
    return mapping


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    overrides = {dest: getattr(args, dest) for _, dest, _, _ in OVERRIDE_FLAGS}
    overrides["jitter"] = True if args.jitter else None
    overrides["columns"] = parse_columns(args.columns)
    return overrides


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

    workload = load_workload(args.source, **overrides_from(args))
    description = workload.describe()
    print(json.dumps(description, indent=2) if args.json else format_text(description))
    return 0


def run_list(args: argparse.Namespace) -> int:
    from workloads import list_presets
    from workloads.presets import preset_description

    for name in list_presets():
        print(f"{name:<20} {preset_description(name)}")
    return 0
