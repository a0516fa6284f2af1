"""The one error type of the workloads package: bad input, reported as a single line.

The CLI (`harness.cli`) catches it, prints the message and exits with code 2, so the message is all a user
sees: it must name the file, the line and the field, never carry a traceback or a newline.
"""

from __future__ import annotations


class WorkloadError(ValueError):
    """A malformed trace, spec file, preset name or option.

    The message reads ``<file>:<line>: <field>: <what is wrong>``; parts that do not apply (an option given on
    the command line has no file) are left out.
    """

    def __init__(
        self, what: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.what = what
        parts: list[str] = []
        if file is not None:
            parts.append(f"{file}:{line}" if line is not None else file)
        if field is not None:
            parts.append(field)
        parts.append(what)
        # A newline would break the one-line contract with the CLI.
        super().__init__(": ".join(parts).replace("\n", " ").replace("\r", " "))


def deepest_line(text: str) -> int:
    """The line a parser's RecursionError most likely came from: the one opening the most brackets (TOML and
    JSON parsers recurse per nesting level and do not say where they gave up)."""
    lines = text.splitlines() or [""]
    return max(range(len(lines)), key=lambda i: lines[i].count("[") + lines[i].count("{")) + 1
