"""Comparing two engine runs: which pairs to compare, and the comparison as the report renders it. The
statistics are the judge's (harness.judge.comparison), so metrics.json, `compare` and the report show one
estimate, interval and p-value for one pair of runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from harness.judge.comparison import ALPHA, QUANTITY, compare_latencies
from harness.judge.pairing import Side, follows_engine
from reports.load import EngineRun, RunData

METRIC_NAMES = {
    "ttft": "TTFT",
    "tpot": "TPOT",
    "e2e": "E2E",
    "queue_delay": "queueing delay",
    "normalized_latency": "normalized latency (E2E / tokens)",
}


@dataclass
class Comparison:
    """Two engine runs compared: paired per request when their schedules match, else by distribution."""

    a: EngineRun  # the baseline
    b: EngineRun
    kind: str  # "paired" or "unpaired"
    reason: str
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.b.label} vs {self.a.label}"

    @property
    def quantity(self) -> str:
        """What `delta` estimates (not the gate's quantity: docs/metrics.md)."""
        return QUANTITY[self.kind]

    @property
    def test_name(self) -> str:
        return "Wilcoxon signed-rank (paired)" if self.kind == "paired" else "Mann-Whitney U and Kolmogorov-Smirnov"

    def to_json(self) -> dict[str, Any]:
        rows = self.table.reset_index().to_dict(orient="records")
        return {
            "a": self.a.label,
            "b": self.b.label,
            "kind": self.kind,
            "reason": self.reason,
            "test": self.test_name,
            "quantity": self.quantity,
            "alpha": ALPHA,
            "metrics": rows,
            "notes": self.notes,
        }


def compare(a: EngineRun, b: EngineRun, *, seed: int = 0, runs: tuple[RunData, RunData] | None = None) -> Comparison:
    """b against the baseline a, paired when the judge's pairing decision allows it; `runs`: the run
    directories a and b belong to (their workload fingerprints and loops), when known."""
    sides = [
        Side(er.records, follows_engine(er.records, run.manifest if run else None), run.fingerprint if run else None)
        for er, run in zip((a, b), runs or (None, None), strict=True)
    ]
    judged = compare_latencies(*sides, a.latencies, b.latencies, seed=seed)
    return Comparison(a, b, judged.kind, judged.reason, judged.table)


def baseline(engines: list[EngineRun]) -> EngineRun:
    """The engine others are compared against: the first static one, else the first."""
    return next((er for er in engines if "static" in er.engine), engines[0])


def plan(runs: list[RunData]) -> list[tuple[EngineRun, EngineRun]]:
    """Within each run, every engine against the run's baseline; across runs, each engine of a later run
    against the same engine of the first run (before/after)."""
    pairs: list[tuple[EngineRun, EngineRun]] = []
    for run in runs:
        engines = run.primary()
        if len(engines) > 1:
            base = baseline(engines)
            pairs.extend((base, er) for er in engines if er is not base)
    first = {er.engine: er for er in runs[0].primary()} if runs else {}
    for run in runs[1:]:
        pairs.extend((first[er.engine], er) for er in run.primary() if er.engine in first)
    return pairs


def compare_runs(runs: list[RunData], *, seed: int = 0) -> list[Comparison]:
    """The comparisons of `plan`, between engine runs that have records (not another tool's aggregates)."""
    owner = {id(er): run for run in runs for er in run.engine_runs}
    return [
        compare(a, b, seed=seed, runs=(owner[id(a)], owner[id(b)]))
        for a, b in plan(runs)
        if not (a.records.empty or b.records.empty)
    ]
