"""SLO classes: named TTFT/TPOT/E2E targets a request may carry (issue #33, item 3).

Parsed from the CLI form `NAME:ttft_ms=...,tpot_ms=...,e2e_ms=...`; a target left out is not checked.
Validated before any work: a bad spec is one line naming the class and field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.errors import HarnessInputError
from harness.metrics.slo import SLO

_FIELDS = ("ttft_ms", "tpot_ms", "e2e_ms")


@dataclass(frozen=True)
class SLOClass:
    name: str
    slo: SLO


def parse_slo_class(text: str) -> SLOClass:
    """One `--slo-class` value; HarnessInputError (one line) when malformed, unknown, NaN or non-positive."""
    name, sep, body = text.partition(":")
    if not sep or not name.strip() or not body.strip():
        raise HarnessInputError(f"--slo-class {text!r}: expected NAME:ttft_ms=...,tpot_ms=...,e2e_ms=...")
    targets: dict[str, float] = {}
    for part in body.split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or key not in _FIELDS:
            raise HarnessInputError(f"--slo-class {name}: unknown field {key!r} (expected one of {', '.join(_FIELDS)})")
        try:
            number = float(value)
        except ValueError:
            raise HarnessInputError(f"--slo-class {name}: {key}={value!r} is not a number") from None
        # NaN would compare False everywhere and silently fail every request; refuse it.
        if not math.isfinite(number) or number <= 0:
            raise HarnessInputError(f"--slo-class {name}: {key}={value!r} must be a positive finite number")
        targets[key] = number / 1e3
    slo = SLO(ttft_s=targets.get("ttft_ms"), tpot_s=targets.get("tpot_ms"), e2e_s=targets.get("e2e_ms"))
    return SLOClass(name=name.strip(), slo=slo)
