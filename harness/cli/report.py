"""`batchmark report RUN_DIR [RUN_DIR ...]`: the self-contained HTML report, exports, Markdown summary."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser(
        "report",
        help="HTML report of one or more run directories (compares them when several)",
        description="Write one self-contained HTML report (plotly.js embedded: it opens with no network) of one "
        "or more run directories. With several, engines are also compared across runs: paired per request "
        "when the schedules are identical, by distribution otherwise.",
    )
    report.add_argument(
        "run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="directories written by batchmark run"
    )
    report.add_argument(
        "-o", "--out", type=Path, help="HTML file (default: RUN_DIR/report.html for one run, ./report.html for several)"
    )
    report.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="NAME",
        help="a name for each RUN_DIR in order, e.g. --label before --label after (default: the directory names)",
    )
    report.add_argument(
        "--export",
        type=Path,
        metavar="DIR",
        help="also write records.csv, records.parquet, report-metrics.json and summary.md to DIR",
    )
    report.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help="also write the Markdown summary to FILE ('-' for standard output), e.g. $GITHUB_STEP_SUMMARY",
    )
    report.add_argument("--no-html", action="store_true", help="skip the HTML report (exports or Markdown only)")
    report.set_defaults(run=run_report)


def default_out(run_dirs: list[Path]) -> Path:
    return run_dirs[0] / "report.html" if len(run_dirs) == 1 else Path("report.html")


def run_report(args: argparse.Namespace) -> int:
    from harness.errors import HarnessInputError
    from reports.analysis import analyse
    from reports.exports import export_all
    from reports.markdown import markdown_summary
    from reports.report import write_report

    if len(args.label) > len(args.run_dirs):
        raise HarnessInputError(f"{len(args.label)} --label values for {len(args.run_dirs)} run directories")
    if len(set(args.label)) != len(args.label):
        raise HarnessInputError("--label values must differ")
    started = time.perf_counter()
    analysis = analyse(args.run_dirs, labels=args.label or None)
    if not args.no_html:
        out = write_report(analysis, args.out or default_out(args.run_dirs))
        size = out.stat().st_size / 1e6
        print(f"wrote {out} ({size:.1f} MB, {time.perf_counter() - started:.1f} s)")
    if args.export:
        for path in export_all(args.run_dirs, args.export, analysis=analysis).values():
            print(f"wrote {path}")
    if args.markdown:
        text = markdown_summary(analysis)
        if str(args.markdown) == "-":
            sys.stdout.write(text)
        else:
            with args.markdown.open("a" if args.markdown.exists() and args.markdown.is_file() else "w") as f:
                f.write(text)
            print(f"wrote {args.markdown}")
    if analysis.banner:
        print(f"! {analysis.banner}")
    for line in analysis.verdict.lines[:1]:
        print(line)
    return 0
