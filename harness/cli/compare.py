"""`batchmark compare RUN_DIR RUN_DIR ...`: headline metrics of several runs side by side, on the console.

The same analysis as the report (reports.analyse): engines of every run, batchmark's own or imported from
another tool, with their 95% intervals, the winner where intervals do not overlap, and every validity flag.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    cmp = sub.add_parser("compare", help="headline metrics of run directories side by side (Markdown on stdout)")
    cmp.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="run directories: batchmark run, sweep points or batchmark import",
    )
    cmp.add_argument("--label", action="append", default=[], metavar="NAME", help="a name per RUN_DIR, in order")
    cmp.set_defaults(run=compare_command)


def compare_command(args: argparse.Namespace) -> int:
    from harness.errors import HarnessInputError
    from reports.analysis import analyse
    from reports.markdown import markdown_summary

    if len(args.label) > len(args.run_dirs) or len(set(args.label)) != len(args.label):
        raise HarnessInputError("--label: at most one distinct name per run directory")
    sys.stdout.write(markdown_summary(analyse(args.run_dirs, labels=args.label or None)))
    return 0
