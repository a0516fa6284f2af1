"""Options shared by spec files (`[transforms]`, `[closed_loop]`, `seed`) and `load_workload(**overrides)`.

One table of names, types and bounds, so a bad value reads the same whether it came from a file or a flag.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from workloads.errors import WorkloadError

# Beyond these, a number is a typo or an overflow, not a workload: 99999999999999999999999 input tokens once
# read back as -9.2e18 and passed the negative check, and `requests = 10000000000` tried to allocate 74.5 GiB.
MAX_TOKENS = 10_000_000  # tokens in one prompt or output: more than any model's context
MAX_REQUESTS = 10_000_000  # requests in one workload: days of the busiest public traces

# name -> (type, lowest allowed value, whether the lowest value itself is allowed)
BOUNDS: dict[str, tuple[type, float | None, bool]] = {
    "seed": (int, 0, True),
    "jitter": (bool, None, True),
    "jitter_width_s": (float, 0, False),
    "start_s": (float, 0, True),
    "duration_s": (float, 0, False),
    "time_scale": (float, 0, False),
    "rate": (float, 0, False),
    "rate_cv": (float, 0, True),
    "first": (int, 1, True),
    "requests": (int, 1, True),
    "max_context": (int, 2, True),
    "closed_loop_users": (int, 1, True),
    "think_time_s": (float, 0, True),
}
# name -> the highest allowed value (inclusive), for the options that have one
HIGHEST: dict[str, float] = {
    "seed": 2**63 - 1,
    "first": MAX_REQUESTS,
    "requests": MAX_REQUESTS,
    "max_context": MAX_TOKENS,
    "closed_loop_users": 100_000,
}


@dataclass(frozen=True)
class Options:
    seed: int = 0
    jitter: bool = False
    jitter_width_s: float | None = None
    start_s: float | None = None
    duration_s: float | None = None
    time_scale: float | None = None
    rate: float | None = None
    rate_cv: float | None = None
    first: int | None = None
    requests: int | None = None
    max_context: int | None = None
    closed_loop_users: int | None = None
    think_time_s: float | None = None

    def given(self) -> dict[str, Any]:
        """The options set to something other than their default."""
        defaults = Options()
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(defaults, f.name)
        }

    def merged(self, overrides: dict[str, Any]) -> Options:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def check_option(name: str, value: Any, where: str | None = None, line: int | None = None) -> Any:
    """The value converted to the option's type, or a WorkloadError naming the option."""
    if name not in BOUNDS:
        raise WorkloadError(f"unknown option; expected one of {', '.join(BOUNDS)}", file=where, line=line, field=name)
    kind, low, inclusive = BOUNDS[name]
    if kind is bool:
        if not isinstance(value, bool):
            raise WorkloadError(f"expected true or false, found {value!r}", file=where, line=line, field=name)
        return value
    numeric = int if kind is int else int | float
    if isinstance(value, bool) or not isinstance(value, numeric) or value != value:  # NaN fails too
        kind_name = "an integer" if kind is int else "a number"
        raise WorkloadError(f"expected {kind_name}, found {value!r}", file=where, line=line, field=name)
    if low is not None and (value < low or (value == low and not inclusive)):
        bound = f">= {low:g}" if inclusive else f"> {low:g}"
        raise WorkloadError(f"must be {bound}, found {value!r}", file=where, line=line, field=name)
    if value == float("inf"):
        raise WorkloadError("must be finite", file=where, line=line, field=name)
    high = HIGHEST.get(name)
    if high is not None and value > high:
        raise WorkloadError(f"must be <= {high:,.0f}, found {value!r}", file=where, line=line, field=name)
    return kind(value)


def make_options(values: dict[str, Any], where: str | None = None) -> Options:
    return Options(**{k: check_option(k, v, where) for k, v in values.items() if v is not None})
