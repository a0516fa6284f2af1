"""The user-facing error contract: every bad input becomes one line on stderr and exit code 2."""

from __future__ import annotations

from engines.errors import EngineInputError


class HarnessInputError(ValueError):
    """A malformed flag, config or run directory given to the harness."""


def user_errors() -> tuple[type[Exception], ...]:
    """Exception types that mean 'the input is wrong', not 'batchmark is broken'."""
    # Imported here, not at the top: the workloads package loads pandas, and `batchmark --help` should not.
    from workloads.errors import WorkloadError

    return (EngineInputError, HarnessInputError, WorkloadError)


def printable(text: str) -> str:
    """`text` with every non-printable character escaped (ESC as \\x1b, a lone surrogate as \\ud800): a message
    quotes input, and a file's control bytes (a colour or window-title sequence) must not reach the terminal."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
