"""The workload override table: every option `load_workload(**overrides)` takes, stated once.

The spec options are the fields of `Options` (a spec file's `seed`, `[transforms]` and `[closed_loop]`);
the trace-source options (`format`, `columns`, `time_unit`) apply to a trace file given directly. Each
field's metadata holds its help text, flag, range and where a spec file writes it. `OVERRIDES` lists
them all: the command line builds its flags from it (`harness/cli/args.py`), `check_option` validates
with it, so a bad value reads the same whether it came from a file or a flag.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field, fields, replace
from typing import Any

from workloads.errors import WorkloadError

# Beyond these, a number is a typo or an overflow, not a workload: 99999999999999999999999 input tokens once
# read back as -9.2e18 and passed the negative check, and `requests = 10000000000` tried to allocate 74.5 GiB.
MAX_TOKENS = 10_000_000  # tokens in one prompt or output: more than any model's context
MAX_REQUESTS = 10_000_000  # requests in one workload: days of the busiest public traces
MAX_SPAN_S = 10 * 365 * 86400.0  # seconds from a workload's start to any arrival or turn: ten years is a typo


def _opt(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    above: bool = False,
    high: float | None = None,
    flag: str | None = None,
    metavar: str | None = None,
    section: str = "transforms",
) -> Any:
    meta = {
        "help": help,
        "low": low,
        "above": above,
        "high": high,
        "flag": flag,
        "metavar": metavar,
        "section": section,
    }
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Options:
    """The options a spec file or the command line sets on a workload (None: not given)."""

    seed: int = _opt(
        0, "seed for everything random (default: the spec's, else 0)", low=0, high=2**63 - 1, metavar="N", section="top"
    )
    jitter: bool = _opt(False, "spread requests that share a timestamp")
    jitter_width_s: float | None = _opt(
        None,
        "with --jitter: spread tied arrivals over at most S seconds",
        low=0,
        above=True,
        flag="--jitter-width",
        metavar="S",
    )
    start_s: float | None = _opt(
        None, "keep requests arriving from S seconds on (re-timed to start at 0)", low=0, flag="--start", metavar="S"
    )
    duration_s: float | None = _opt(
        None,
        "keep S seconds of the trace; synthetic: generate S seconds",
        low=0,
        above=True,
        flag="--duration",
        metavar="S",
    )
    time_scale: float | None = _opt(
        None, "replay K times as fast (arrival times divided by K)", low=0, above=True, metavar="K"
    )
    rate: float | None = _opt(
        None, "new mean rate R req/s over the same span, keeping the length mix", low=0, above=True, metavar="R"
    )
    rate_cv: float | None = _opt(None, "inter-arrival CV for --rate (default: the trace's own)", low=0, metavar="CV")
    first: int | None = _opt(None, "keep the first N requests", low=1, high=MAX_REQUESTS, metavar="N")
    requests: int | None = _opt(
        None, "sample N requests from a trace; synthetic: generate N", low=1, high=MAX_REQUESTS, metavar="N"
    )
    max_context: int | None = _opt(
        None, "clip input + output to N tokens (reported in the notes)", low=2, high=MAX_TOKENS, metavar="N"
    )
    closed_loop_users: int | None = _opt(
        None, "make it a closed loop of N users", low=1, high=100_000, metavar="N", section="closed_loop"
    )
    think_time_s: float | None = _opt(
        None, "closed-loop think time in seconds", low=0, flag="--think-time", metavar="S", section="closed_loop"
    )

    def given(self) -> dict[str, Any]:
        """The options set to something other than their default."""
        defaults = Options()
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(defaults, f.name)
        }

    def merged(self, overrides: dict[str, Any]) -> Options:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class Override:
    """One row of the table: an option, its type, range, help and flag."""

    name: str
    type: type  # int, float, bool, str or dict (a column mapping, given as KEY=COL,... on the command line)
    help: str
    flag: str
    metavar: str | None
    low: float | None = None
    above: bool = False
    section: str = "transforms"  # where a spec file writes it: top, transforms, closed_loop, or trace (source)
    high: float | None = None  # the highest allowed value (inclusive)

    def range_text(self) -> str:
        return "" if self.low is None else f"{'>' if self.above else '>='} {self.low:g}"


def _from_options() -> tuple[Override, ...]:
    hints = typing.get_type_hints(Options)
    rows = []
    for f in fields(Options):
        kind = next(t for t in (bool, int, float) if t is hints[f.name] or t in typing.get_args(hints[f.name]))
        m = f.metadata
        flag = m["flag"] or "--" + f.name.replace("_", "-")
        rows.append(
            Override(f.name, kind, m["help"], flag, m["metavar"], m["low"], m["above"], m["section"], m["high"])
        )
    return tuple(rows)


# The trace-source options: how to read a trace file given directly (a spec file's [trace] table).
SOURCE_OVERRIDES: tuple[Override, ...] = (
    Override(
        "format",
        str,
        "trace format: auto, csv, jsonl, azure, burstgpt, mooncake, canonical-csv, ...",
        "--format",
        "FORMAT",
        section="trace",
    ),
    Override(
        "time_unit",
        str,
        "arrival unit of a generic trace: s, ms, us, ns or datetime",
        "--time-unit",
        "UNIT",
        section="trace",
    ),
    Override(
        "columns",
        dict,
        "column mapping for a generic CSV/JSONL, e.g. arrival=t,input_tokens=in,"
        "output_tokens=out[,tenant=user,priority=prio,prompt_text=text]",
        "--columns",
        "KEY=COL,...",
        section="trace",
    ),
)
OVERRIDES: tuple[Override, ...] = (*_from_options(), *SOURCE_OVERRIDES)
BY_NAME: dict[str, Override] = {o.name: o for o in OVERRIDES}
SPEC_OPTIONS = tuple(o.name for o in OVERRIDES if o.section != "trace")
TRANSFORM_KEYS = frozenset(o.name for o in OVERRIDES if o.section == "transforms")


def check_option(name: str, value: Any, where: str | None = None, line: int | None = None) -> Any:
    """The value converted to the option's type, or a WorkloadError naming the option."""
    option = BY_NAME.get(name)
    if option is None or option.section == "trace":
        known = ", ".join(SPEC_OPTIONS)
        raise WorkloadError(f"unknown option; expected one of {known}", file=where, line=line, field=name)
    kind = option.type
    if kind is bool:
        if not isinstance(value, bool):
            raise WorkloadError(f"expected true or false, found {value!r}", file=where, line=line, field=name)
        return value
    numeric = int if kind is int else int | float
    if isinstance(value, bool) or not isinstance(value, numeric) or value != value:  # NaN fails too
        kind_name = "an integer" if kind is int else "a number"
        raise WorkloadError(f"expected {kind_name}, found {value!r}", file=where, line=line, field=name)
    low = option.low
    if low is not None and (value < low or (value == low and option.above)):
        raise WorkloadError(f"must be {option.range_text()}, found {value!r}", file=where, line=line, field=name)
    if not math.isfinite(value):
        raise WorkloadError("must be finite", file=where, line=line, field=name)
    if option.high is not None and value > option.high:
        raise WorkloadError(f"must be <= {option.high:,.0f}, found {value!r}", file=where, line=line, field=name)
    return kind(value)


def parse_columns(text: str | None) -> dict[str, Any] | None:
    """`--columns KEY=COL,...` as the mapping a spec's `[trace.columns]` holds; `tenant` may name several."""
    if text is None:
        return None
    mapping: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise WorkloadError(f"expected KEY=COLUMN pairs separated by commas, found {item!r}", field="columns")
        key, value = key.strip(), value.strip()
        if key == "tenant" and "tenant" in mapping:
            previous = mapping["tenant"]
            mapping["tenant"] = [*([previous] if isinstance(previous, str) else previous), value]
        else:
            mapping[key] = value
    return mapping
