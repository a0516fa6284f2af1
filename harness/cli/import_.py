"""`batchmark import FILE`: another tool's result as a run directory (vLLM bench, GuideLLM, AIPerf, llm-d BR,
inference-perf's per-request file)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    imp = sub.add_parser(
        "import",
        help="another tool's results (vllm bench serve, GuideLLM, AIPerf, llm-d Benchmark Report, inference-perf) "
        "as a run directory",
        description="Read a `vllm bench serve` result JSON (per-request data with --save-detailed), a GuideLLM "
        "benchmarks.json, an AIPerf profile export (profile_export.jsonl, or profile_export_aiperf.json for "
        "aggregates), an llm-d Benchmark Report v0.2 (inference-perf, llm-d-benchmark, `batchmark export`; "
        "aggregates) or inference-perf's per_request_lifecycle_metrics.json (its load from the config.yaml beside "
        "it) and write a run directory that `batchmark report`, `compare` and `gate` read. Metrics are "
        "mapped to batchmark's names; where definitions differ the run says how (docs/metrics.md).",
    )
    imp.add_argument("file", type=Path, metavar="FILE", help="the tool's result file")
    imp.add_argument(
        "--format",
        default="auto",
        choices=("auto", "vllm", "guidellm", "aiperf", "llm-d-br", "inference-perf"),
        help="which tool wrote FILE (default: told from its shape)",
    )
    imp.add_argument("--out", type=Path, help="run directory (default runs/<time>-import-<file name>)")
    imp.add_argument("--label", help="engine label in the run directory (default: the tool's name)")
    imp.add_argument("--slo-ttft-ms", type=float, help="TTFT SLO for goodput and attainment (default 2000)")
    imp.add_argument("--slo-tpot-ms", type=float, help="TPOT SLO (default 200)")
    imp.set_defaults(run=import_command)


def import_command(args: argparse.Namespace) -> int:
    from harness.importers import read
    from harness.importers.rundir import LACKS, reported_table, write_run_dir
    from harness.metrics import SLO

    defaults = SLO()
    slo = SLO(
        ttft_s=args.slo_ttft_ms / 1e3 if args.slo_ttft_ms is not None else defaults.ttft_s,
        tpot_s=args.slo_tpot_ms / 1e3 if args.slo_tpot_ms is not None else defaults.tpot_s,
    )
    imported = read(args.file, args.format, args.label)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    out = args.out or Path("runs") / f"{stamp}-import-{args.file.stem}"
    write_run_dir(imported, out, slo=slo, argv=sys.argv)
    print(f"imported {imported.tool}: {imported.schema}")
    for run in imported.runs:
        what = f"{len(run.records)} request records" if run.records is not None else "aggregates only"
        kind = {"closed": f"closed loop of {run.scenario.users} users", "open": "open loop"}.get(run.scenario.kind)
        print(f"  {run.label}: {what}, {kind or run.scenario.kind}")
        for note in run.notes:
            print(f"    note: {note}")
    print(f"n/a (not in the tool's file): {', '.join(LACKS)}")
    print("the tool's own aggregates, under batchmark's names:")
    print("\n".join(reported_table({r.label: r.reported for r in imported.runs})))
    print(f"run directory: {out.resolve()}")
    print(f"next: batchmark report {out} [YOUR_RUN ...]   (side by side with batchmark's runs)")
    return 0
