"""SLO classes: named TTFT/TPOT/E2E targets a request may carry (issue #33, item 3).

Parsed from the CLI form `NAME:ttft_ms=...,tpot_ms=...,e2e_ms=...`; a target left out is not checked.
Validated before any work: a bad spec is one line naming the class and field. `per_class` measures each
class against its own targets (attainment and goodput with intervals, the binding constraint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.errors import HarnessInputError
from harness.metrics.intervals import wilson
from harness.metrics.slo import SLO, describe_limits, goodput
from harness.metrics.stats import scipy_stats
from harness.metrics.throughput import steady_window
from workloads.errors import WorkloadError
from workloads.slo_targets import ClassTargets, class_targets


@dataclass(frozen=True)
class SLOClass:
    name: str
    slo: SLO
    source: str = "--slo-class"  # where its targets were given: "--slo-class" or a spec's "FILE:LINE"

    @staticmethod
    def of(targets: ClassTargets) -> SLOClass:
        return SLOClass(targets.name, SLO(targets.ttft_s, targets.tpot_s, targets.e2e_s), targets.source)


def parse_slo_class(text: str) -> SLOClass:
    """One `--slo-class` value; HarnessInputError (one line) when malformed, unknown, NaN or non-positive (the
    fields and checks are a spec's too: workloads/slo_targets.py)."""
    name, sep, body = text.partition(":")
    if not sep or not name.strip() or not body.strip():
        raise HarnessInputError(f"--slo-class {text!r}: expected NAME:ttft_ms=...,tpot_ms=...,e2e_ms=...")
    items = [(key.strip(), value) for key, _, value in (part.partition("=") for part in body.split(","))]
    try:
        return SLOClass.of(class_targets(name.strip(), items, "--slo-class", text=True))
    except WorkloadError as exc:
        raise HarnessInputError(f"--slo-class {name.strip()}: {exc.what}") from None


# -- per-class attainment and goodput -----------------------------------------------------------------
LIMITS = ("ttft", "tpot", "e2e")


def per_class(
    records: pd.DataFrame, classes: Sequence[SLOClass], *, warmup_fraction: float, confidence: float = 0.95
) -> dict[str, Any] | None:
    """Per class: `goodput` of its requests against its own targets, a Wilson interval on the attainment, an
    exact Poisson interval on the steady goodput (from the count of SLO-meeting finishes in its window), and
    the binding constraint (the limit most of its successful requests missed; None when none was missed).
    None without classes. The windows are those of the class's own requests."""
    if not classes:
        return None
    column = records["slo_class"] if "slo_class" in records else pd.Series(None, index=records.index)
    out: dict[str, Any] = {}
    for cls in classes:
        mine = records[column == cls.name]
        if mine.empty:
            out[cls.name] = {"slo": cls.slo.to_json(), "requests": 0, "reason": "no request of this class ran"}
            continue
        result = goodput(mine, cls.slo, warmup_fraction=warmup_fraction)
        result["attainment_ci"] = _wilson(result["met"], result["requests"], confidence)
        result["goodput_rps_steady_ci"] = _goodput_ci(mine, cls.slo, result, warmup_fraction, confidence)
        missed = {k: result["violations"][k] for k in LIMITS if getattr(cls.slo, f"{k}_s") is not None}
        worst = max(missed.values(), default=0)
        result["binding"] = next((k for k, v in missed.items() if v == worst), None) if worst else None
        out[cls.name] = result
    return out


def _wilson(k: int, n: int, confidence: float) -> list[float] | None:
    e = wilson(k, n, confidence)
    return None if e.value is None else [e.low, e.high]  # type: ignore[list-item]


def _goodput_ci(
    records: pd.DataFrame, slo: SLO, result: dict[str, Any], warmup_fraction: float, confidence: float
) -> list[float] | None:
    rate = result["goodput_rps_steady"]
    window = steady_window(records, warmup_fraction=warmup_fraction)
    if rate is None or window is None:
        return None
    count = round(rate * window.duration_s)  # the SLO-meeting finishes the rate was counted from
    alpha = 1 - confidence
    low = float(scipy_stats().chi2.ppf(alpha / 2, 2 * count)) / 2 if count else 0.0
    high = float(scipy_stats().chi2.ppf(1 - alpha / 2, 2 * count + 2)) / 2
    return [low / window.duration_s, high / window.duration_s]


def describe_class(name: str, row: dict[str, Any]) -> str:
    """One line for a class's figures in `per_class` (console and report): n/a with the reason, never 0."""
    if not row.get("requests"):
        return f"class {name}: n/a ({row.get('reason', 'no requests')})"
    ci = row.get("attainment_ci")
    share = f"{row['attainment']:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")
    rate = row.get("goodput_rps_steady")
    gci = row.get("goodput_rps_steady_ci")
    if rate is None:
        good = f"n/a ({row.get('goodput_rps_steady_reason')})"
    else:
        good = f"{rate:.3g} req/s" + (f" [{gci[0]:.3g}, {gci[1]:.3g}]" if gci else "")
    targets = describe_limits(row["slo"])
    binding = row.get("binding")
    limit = f"binding: {binding} ({row['violations'][binding]} missed)" if binding else "no limit missed"
    failed = row["violations"]["failed"]
    return (
        f"class {name} ({targets}): {row['met']}/{row['requests']} met, attainment {share}, goodput {good}; "
        f"{limit}" + (f", {failed} failed" if failed else "")
    )
