"""The `batchmark` command line, on top of everything: one module per command, each with
`register(subparsers)`, and the flags they share in `args.py` (built from the engine and workload option
tables). A command module imports `args` and the packages it drives, never another command's module.

Command modules import torch and friends inside their run functions so `batchmark --help` and light
commands such as `workload describe` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from typing import Any, NoReturn

from engines import compute_threads
from harness.errors import printable, user_errors

# module names; `import_` is the `import` command (a keyword cannot name a module)
COMMANDS = (
    "bench",
    "workload",
    "run",
    "serve",
    "probe",
    "report",
    "compare",
    "import_",
    "export",
    "gate",
    "sweep",
    "calibrate",
    "sim",
    "study",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse's own errors (an unknown flag, a bad choice) as one line and exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"batchmark: error: {self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="batchmark",
        description="Measure what continuous batching buys over static batching.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"harness.cli.{name}").register(sub)
    return parser


def _one_line_warning(message: Any, category: type[Warning], *_: Any, **__: Any) -> str:
    """A warning on the command line as one line, like an error: no source path, no quoted code line."""
    return f"batchmark: warning: {printable(str(message))}\n"


def main(argv: list[str] | None = None) -> int:
    # No hub access anywhere: every model and tokenizer is local.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # before torch loads libgomp: idle OpenMP workers must not spin on a shared machine (docs/threads.md)
    compute_threads.wait_passively()
    if argv is None:  # the command line itself (a caller of main keeps its own warning format)
        warnings.formatwarning = _one_line_warning
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or argparse's one-line error (2): a return code, for callers of main
        return int(exc.code or 0)
    try:
        return int(args.run(args) or 0)
    except user_errors() as exc:
        # a message can quote input it refused, control bytes and lone surrogates included ("\ud800" in a JSON
        # key): written escaped, so neither the terminal nor a strict stderr (PYTHONIOENCODING=utf-8:strict) sees them
        line = f"batchmark: error: {printable(str(exc))}"
        print(line, file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`batchmark ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("batchmark: interrupted; records written so far are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
