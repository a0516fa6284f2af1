"""`batchmark export RUN --format llm-d-br`: a run directory in another tool's result schema."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    exp = sub.add_parser(
        "export",
        help="a run directory as llm-d Benchmark Reports v0.2 (one per engine run)",
        description="Write each engine run of RUN as an llm-d Benchmark Report v0.2 (llm-d/llm-d-benchmark "
        "benchmark_report/schema_v0_2.py @ 093eecc), the schema inference-perf and llm-d-benchmark emit; "
        "`batchmark import` reads it back. What the schema cannot carry (intervals, arrival-based TTFT, "
        "steady-window rates, SLO figures) is left out, never written as 0 (docs/metrics.md).",
    )
    exp.add_argument("run_dir", type=Path, metavar="RUN", help="a run directory (metrics.json, manifest.json)")
    exp.add_argument("--format", default="llm-d-br", choices=("llm-d-br",), help="the schema (default llm-d-br)")
    exp.add_argument("--out", type=Path, help="directory for the reports (default RUN/exports/llm-d-br)")
    exp.set_defaults(run=export_command)


def export_command(args: argparse.Namespace) -> int:
    from harness.importers.llmd_write import export_run

    out = args.out or args.run_dir / "exports" / "llm-d-br"
    for path in export_run(args.run_dir, out):
        print(f"wrote {path}")
    print(f"next: batchmark import {out}/<engine>-trial0.json   (reads it back as a run directory)")
    return 0
