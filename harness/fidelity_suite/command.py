"""`batchmark sim fidelity --suite FILE [--runs DIR] [--measure] [--lock FILE] [--json F]`: its options and its
work; `harness/cli/sim.py` registers them and passes its twin simulation in."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessInputError

if TYPE_CHECKING:  # the table imports the judge (numpy, scipy): not while the command line is built
    from harness.fidelity_suite.rule import Simulate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--suite",
        type=Path,
        metavar="FILE",
        help="a pre-registered suite (TOML, tests/fixtures/fidelity_suite/suite.toml): every pair's "
        "twin against its real run, instead of one run",
    )
    parser.add_argument(
        "--runs",
        type=Path,
        metavar="DIR",
        help="--suite: the real runs and profiles (default: runs/ beside the suite file)",
    )
    parser.add_argument(
        "--measure",
        action="store_true",
        help="--suite: first record the runs DIR lacks (the fit run, its profiles, every pair)",
    )
    parser.add_argument(
        "--lock",
        type=Path,
        metavar="FILE",
        help="--measure: hold this lock file (flock) around each real run, so that other "
        "measurements on the machine take turns between runs",
    )


def suite_command(args: argparse.Namespace, simulate: Simulate) -> int:
    """`simulate`: one twin's summary (`harness.cli.sim.simulate_twin`, passed in: that module calls this one)."""
    from harness.fidelity_suite.measure import measure
    from harness.fidelity_suite.spec import load_suite
    from harness.fidelity_suite.table import format_table, suite_table

    if args.real_run is not None or args.profile is not None or args.engines:
        raise HarnessInputError("--suite: names its runs, engines and profiles itself; drop RUN, --profile, --engine")
    if args.json and args.json.is_dir():
        raise HarnessInputError(f"--json {args.json}: is a directory; name the table's JSON file")
    suite = load_suite(args.suite)  # every pair checked before any run
    rule = suite.tipping
    if rule is not None and args.sensitivity not in (None, rule.fraction):
        raise HarnessInputError(
            f"--sensitivity {args.sensitivity:g}: {args.suite} registers its tipping rule at sensitivity = "
            f"{rule.fraction:g}; drop --sensitivity or give that fraction"
        )
    runs = args.runs or args.suite.parent / "runs"
    if args.measure:
        measure(suite, runs, args.lock)
    elif not runs.is_dir():
        raise HarnessInputError(f"--runs {runs}: no such directory (record the runs with --measure)")
    table = suite_table(suite, runs, simulate, args.seeds, args.noise, args.sensitivity)
    print(format_table(table))
    if args.json:
        args.json.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return 0
