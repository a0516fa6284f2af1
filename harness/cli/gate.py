"""`batchmark gate`: compare a candidate run with a baseline under noise-aware rules (docs/gate.md).

Exit codes: 0 every rule passed, 1 a regression, 2 invalid input, 3 no regression but a rule had no data
(an empty or degenerate steady window, zero on both sides, too few requests): a gate that measured
nothing fails, and says so apart from a slowdown.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli import args as shared

if TYPE_CHECKING:
    from harness.gate import GateConfig


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", type=Path, metavar="FILE", help="rules file (gate.toml, grammar in docs/gate.md)")
    parser.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="RULE",
        help="a rule such as 'ttft.p99 <= +10%%' (repeatable; added to the file's)",
    )
    parser.add_argument("--engine", help="engine label on both sides (when a run holds several)")
    parser.add_argument("--baseline-engine", help="engine label in the baseline run")
    parser.add_argument("--candidate-engine", help="engine label in the candidate run")
    parser.add_argument("--trial", type=int, help="compare this trial only (default: all trials, pooled)")
    shared.add_gate_flags(parser)
    shared.add_slo_flags(parser, "the baseline's", "the baseline's")


def register(sub: argparse._SubParsersAction) -> None:
    gate = sub.add_parser("gate", help="CI regression gate: noise-aware rules, candidate run vs baseline run")
    gate.add_argument(
        "--baseline",
        type=Path,
        nargs="+",
        metavar="RUN",
        help="baseline run directory or records.jsonl; several: their trials, in order",
    )
    gate.add_argument(
        "--candidate",
        type=Path,
        nargs="+",
        metavar="RUN",
        required=True,
        help="candidate run directory; several: their trials, in order",
    )
    add_gate_arguments(gate)
    gate.add_argument("--json", type=Path, metavar="PATH", help="write the JSON verdict here ('-': stdout)")
    gate.add_argument("--markdown", type=Path, metavar="PATH", help="write the Markdown summary here")
    gate.add_argument("--quiet", action="store_true", help="print only the one-line verdict")
    gate.set_defaults(run=gate_command)


def config_from_args(args: argparse.Namespace) -> GateConfig:
    return shared.gate_config(
        args,
        "gate",
        baseline_engine=args.baseline_engine or args.engine,
        candidate_engine=args.candidate_engine or args.engine,
    )


def gate_command(args: argparse.Namespace) -> int:
    from harness.gate import evaluate, one_line, to_markdown
    from harness.gate.inputs import load_runs

    config = config_from_args(args)
    candidate = load_runs(args.candidate, engine=config.candidate_engine, trial=args.trial)
    baseline = load_runs(args.baseline, engine=config.baseline_engine, trial=args.trial) if args.baseline else None
    verdict = evaluate(config, baseline, candidate)
    markdown = to_markdown(verdict)
    data = json.dumps(verdict.to_json(), indent=2, allow_nan=False) + "\n"
    if args.json is not None and str(args.json) != "-":
        args.json.write_text(data)
    if args.markdown is not None:
        args.markdown.write_text(markdown)
    if args.json is not None and str(args.json) == "-":
        sys.stdout.write(data)
    elif not args.quiet:
        sys.stdout.write(markdown)
    print(one_line(verdict), file=sys.stderr if str(args.json) == "-" else sys.stdout)
    return verdict.exit_code
