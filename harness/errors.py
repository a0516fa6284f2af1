"""The user-facing error contract: every bad input becomes one line on stderr and exit code 2."""

from __future__ import annotations

from engines.errors import EngineInputError


class HarnessInputError(ValueError):
    """A malformed flag, config or run directory given to the harness."""


def user_errors() -> tuple[type[Exception], ...]:
    """Exception types that mean 'the input is wrong', not 'batchmark is broken'."""
    errors: list[type[Exception]] = [EngineInputError, HarnessInputError]
    try:
        from workloads.errors import WorkloadError
    except ImportError:  # the workloads package is optional for engine-only commands
        pass
    else:
        errors.append(WorkloadError)
    return tuple(errors)
