"""Simulator fidelity: how far a simulated engine's headline metrics land from a measured twin's.

Pure functions of summaries (`harness.metrics.summarize`) and of the engine descriptions in a run's
manifest, so the CLI (`batchmark sim fidelity`) and the report compute the same table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FidelityMetric:
    name: str
    path: tuple[str, ...]  # where it sits in a summary
    unit: str


FIDELITY_METRICS = (
    FidelityMetric("TTFT p50", ("latency", "ttft", "percentiles", "p50", "value"), "s"),
    FidelityMetric("TTFT p99", ("latency", "ttft", "percentiles", "p99", "value"), "s"),
    FidelityMetric("TPOT p50", ("latency", "tpot", "percentiles", "p50", "value"), "s"),
    FidelityMetric("TPOT p99", ("latency", "tpot", "percentiles", "p99", "value"), "s"),
    FidelityMetric("E2E p50", ("latency", "e2e", "percentiles", "p50", "value"), "s"),
    FidelityMetric("output tok/s", ("throughput", "steady", "output_token_rate"), "tok/s"),
)


def _value(summary: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    node: Any = summary
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) and math.isfinite(node) else None


def fidelity_rows(real: Mapping[str, Any], simulated: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per fidelity metric: real value, simulated value, relative error (None: no data)."""
    rows = []
    for metric in FIDELITY_METRICS:
        r, s = _value(real, metric.path), _value(simulated, metric.path)
        error = (s - r) / r if r not in (None, 0.0) and s is not None else None
        rows.append({"metric": metric.name, "unit": metric.unit, "real": r, "simulated": s, "error": error})
    return rows


def twins(engines: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(real label, simulated label) pairs in one run: a sim engine names its twin with `twin=`, or
    is paired with the one measured engine that runs the same scheduler."""
    real = [e for e in engines if not e.get("simulated")]
    pairs = []
    for sim in (e for e in engines if e.get("simulated")):
        twin = (sim.get("simulated_with") or {}).get("twin")
        if twin is None:
            same = [e["name"] for e in real if e.get("kind") == sim.get("scheduler")]
            twin = same[0] if len(same) == 1 else None
        if twin is not None and any(e["name"] == twin for e in real):
            pairs.append((str(twin), str(sim["name"])))
    return pairs
