"""The README's command table lists every command the CLI registers (and every subcommand of a command
that has them), so a new command cannot ship undocumented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from harness.cli import build_parser

README = Path(__file__).resolve().parent.parent / "README.md"


def _commands(parser: argparse.ArgumentParser, prefix: str = "batchmark") -> list[str]:
    """Every leaf command as typed: `batchmark run`, `batchmark sim fit`, ..."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [prefix]
    return [c for name, sub in subs[0].choices.items() for c in _commands(sub, f"{prefix} {name}")]


def test_the_readme_command_table_lists_every_command() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Commands") :]
    table = table[: table.index("\n\n", table.index("| command |"))]
    listed = set(re.findall(r"^\| `(batchmark [a-z][a-z_-]*(?: [a-z][a-z_-]*)?)", table, flags=re.M))
    commands = _commands(build_parser())
    assert len(commands) >= 16  # run, gate, sweep, calibrate, serve, probe, report, sim fit, ...
    missing = [c for c in commands if c not in listed]
    assert not missing, f"README.md's command table lacks: {', '.join(missing)}"
