"""The command-line flags that are neither engine options nor workload overrides, as one table per group.

Each `Flag` states its type, range and help once; `add_flags` builds the argparse flags from a table and
`check_flags` checks the values a command was given, before any model loads or any request is sent.
Values arrive as text, so argparse never prints its own usage-and-error pair: a bad value is one line
naming the flag (`--slo-ttft-ms nan: must be a finite number > 0`) and exit 2. NaN and infinity are
never numbers here; an output directory must be one that can be written.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError


@dataclass(frozen=True)
class Flag:
    """One flag: its type, default, range and help."""

    flag: str
    type: type  # int, float, str, or Path (a directory to write, created when missing)
    help: str
    default: Any = None
    low: float | None = None  # the lowest allowed value ...
    above: bool = False  # ... or strictly above it
    high: float | None = None  # the highest allowed value (inclusive)
    metavar: str | None = None
    dest: str | None = None

    @property
    def name(self) -> str:
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    def range_text(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.above else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        return " and ".join(parts)

    def add(self, parser: argparse.ArgumentParser) -> None:
        shown = f" (default {self.default:g})" if isinstance(self.default, int | float) and self.default else ""
        parser.add_argument(
            self.flag,
            dest=self.name,
            default=self.default,
            metavar=self.metavar,
            help=(self.help + shown).replace("%", "%%"),
        )

    def check(self, value: Any) -> Any:
        """`value` converted to the flag's type and checked; HarnessInputError naming the flag otherwise."""
        if value is None or (value == self.default and not isinstance(value, str)):
            return value
        if self.type is Path:
            return writable_dir(Path(value), self.flag)
        if self.type is str:
            return str(value)
        kind = "an integer" if self.type is int else "a number"
        try:
            number = self.type(value)
        except (TypeError, ValueError, OverflowError):
            raise HarnessInputError(f"{self.flag} {value}: must be {kind}") from None
        if not math.isfinite(number):
            raise HarnessInputError(f"{self.flag} {value}: must be a finite number {self.range_text()}".rstrip())
        low, high = self.low, self.high
        too_low = low is not None and (number < low or (self.above and number == low))
        if too_low or (high is not None and number > high):
            raise HarnessInputError(f"{self.flag} {value}: must be {self.range_text()}")
        return number


def add_flags(parser: argparse.ArgumentParser, flags: Sequence[Flag]) -> None:
    for flag in flags:
        flag.add(parser)


def check_flags(args: argparse.Namespace, flags: Sequence[Flag]) -> None:
    """Every flag of `flags` checked, and replaced by its typed value, in place."""
    for flag in flags:
        setattr(args, flag.name, flag.check(getattr(args, flag.name, None)))


def writable_dir(path: Path, flag: str) -> Path:
    """`path` if it is, or can become, a directory that takes new files; one line if not. Creates nothing: the
    nearest existing ancestor is what is tried (a temporary file made and removed at once)."""
    if path.exists() and not path.is_dir():
        raise HarnessInputError(f"{flag} {path}: is a file, not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise HarnessInputError(f"{flag} {path}: {existing} is a file, not a directory")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".batchmark-write-test-"):
            pass
    except OSError as exc:
        raise HarnessInputError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from None
    return path
