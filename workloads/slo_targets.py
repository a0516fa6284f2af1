"""An SLO class's targets: the one definition of their fields and checks (issue #33, item 3).

Both places a class's targets come from use it: a spec's `[[slo_classes]]` tables (workloads/spec.py) and the
CLI's `--slo-class NAME:ttft_ms=...` (harness/metrics/slo_classes.py). A target left out is not checked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workloads.errors import WorkloadError

TARGET_FIELDS = ("ttft_ms", "tpot_ms", "e2e_ms")  # each in milliseconds as given; kept in seconds


@dataclass(frozen=True)
class ClassTargets:
    """A named class and its targets in seconds (None: not checked), with where they were given."""

    name: str
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    source: str = ""  # "FILE:LINE" of a spec's table, or "--slo-class"


def class_targets(name: str, items: Iterable[tuple[str, Any]], source: str, *, text: bool = False) -> ClassTargets:
    """`items` (field, value) checked: a known field, given once, a positive finite number (`text`: the values
    are the CLI's strings, parsed first; a spec's must already be numbers). WorkloadError(what, field=FIELD)
    otherwise."""
    seconds: dict[str, float] = {}
    for key, value in items:
        if key not in TARGET_FIELDS:
            raise WorkloadError(f"unknown field {key!r} (expected one of {', '.join(TARGET_FIELDS)})", field=key)
        if key in seconds:  # the last would silently win: which one the user meant is unknowable
            raise WorkloadError(f"{key} given twice", field=key)
        number = value
        if text and isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise WorkloadError(f"{key}={value!r} is not a number", field=key) from None
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise WorkloadError(f"{key}={value!r} is not a number", field=key)
        # NaN would compare False everywhere and silently fail every request; refuse it.
        if not math.isfinite(number) or number <= 0:
            raise WorkloadError(f"{key}={value!r} must be a positive finite number", field=key)
        seconds[key] = number / 1e3
    return ClassTargets(name, seconds.get("ttft_ms"), seconds.get("tpot_ms"), seconds.get("e2e_ms"), source=source)
