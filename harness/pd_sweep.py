"""A P:D sweep: for a given number of GPUs, every prefill:decode split of the simulated disaggregated engine
(`disagg:prefill=P,decode=D,...`) and the colocated cluster of the same GPUs, on one schedule, ranked by
goodput under the SLO (DistServe's measure: requests per second that meet it).

Every split is an engine of one `batchmark run`, so each replays the identical schedule and the run directory
holds them all, paired; this module makes the specs and reads the verdict from the run's metrics.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import HarnessInputError


@dataclass(frozen=True)
class Split:
    """One configuration of the sweep: `prefill` and `decode` replicas (colocated: `decode` 0, every replica both)."""

    label: str
    prefill: int
    decode: int
    gpus: int

    @property
    def colocated(self) -> bool:
        return self.decode == 0


def replica_gpus(replica: str) -> int:
    """GPUs one replica of `replica` (a `sim:` spec) takes: its tensor-parallel degree."""
    kind, _, rest = replica.partition(":")
    if kind != "sim":
        raise HarnessInputError(f"--replica {replica!r}: a P:D sweep simulates replicas: give a sim:... spec")
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key == "tp":
            try:
                tp = int(value)
            except ValueError:
                raise HarnessInputError(f"--replica {replica!r}: tp={value!r} is not a whole number") from None
            if tp < 1:
                raise HarnessInputError(f"--replica {replica!r}: tp={value!r} must be >= 1")
            return tp
    return 1


def sweep_specs(gpus: int, replica: str, disagg: str = "", colocated: bool = True) -> list[tuple[Split, str]]:
    """Every split of `gpus` GPUs (each pool at least one replica) as `--engine` specs, the colocated cluster first."""
    per = replica_gpus(replica)
    if gpus < 2 * per or gpus % per:
        raise HarnessInputError(
            f"--gpus {gpus}: need a multiple of the replica's {per} GPU(s) (its tp) that "
            f"leaves each pool a replica: at least {2 * per}"
        )
    replicas = gpus // per
    extra = f"{disagg}," if disagg else ""
    out: list[tuple[Split, str]] = []
    if colocated:
        split = Split(f"colocated{replicas}", replicas, 0, gpus)
        out.append(
            (split, f"cluster:replicas={replicas},router=least_outstanding,label={split.label},replica={replica}")
        )
    for p in range(1, replicas):
        split = Split(f"p{p}d{replicas - p}", p, replicas - p, gpus)
        out.append((split, f"disagg:prefill={p},decode={replicas - p},{extra}label={split.label},replica={replica}"))
    return out


def rank_splits(splits: list[Split], engines: dict[str, Any]) -> dict[str, Any]:
    """The sweep's table and verdict from metrics.json's `engines`: the split with the most goodput under the SLO.
    A split whose goodput is not measured (a run too short to have a steady window) says why and is not ranked;
    with none measured the verdict is 'cannot tell', never a 0."""
    rows = []
    for split in splits:
        summary = engines.get(split.label) or {}
        slo = summary.get("slo") or {}
        rows.append(
            {
                **asdict(split),
                "goodput_rps": slo.get("goodput_rps_steady"),
                "goodput_reason": slo.get("goodput_rps_steady_reason"),
                "slo_attainment": slo.get("attainment"),
            }
        )
    ranked = [r for r in rows if r["goodput_rps"] is not None and r["decode"] != 0]
    best = max(ranked, key=lambda r: r["goodput_rps"], default=None)  # first of equals: the fewest prefill GPUs
    top = None if best is None else best["goodput_rps"]
    ties = [f"{r['prefill']}:{r['decode']}" for r in ranked if r["goodput_rps"] == top]
    colo = next((r for r in rows if r["decode"] == 0), None)
    return {
        "rows": rows,
        "best": best,
        "ties": ties,
        "colocated": colo,
        "verdict": "cannot tell" if best is None else " = ".join(ties),
    }


def format_sweep(result: dict[str, Any], slo: str) -> list[str]:
    """The console lines: one per split, then the verdict."""

    def rate(row: dict[str, Any]) -> str:
        if row["goodput_rps"] is None:
            return f"n/a ({row['goodput_reason'] or 'not measured'})"
        return f"{row['goodput_rps']:.2f}"

    lines = [f"{'split':>14}  {'GPUs':>5}  {'SLO met':>8}  goodput r/s"]
    for row in result["rows"]:
        split = "colocated" if row["decode"] == 0 else f"{row['prefill']}:{row['decode']}"
        met = "n/a" if row["slo_attainment"] is None else f"{row['slo_attainment']:.0%}"
        lines.append(f"{split:>14}  {row['gpus']:>5}  {met:>8}  {rate(row)}")
    best, colo = result["best"], result["colocated"]
    if best is None:
        lines.append(f"best P:D split under the SLO ({slo}): cannot tell (no split has a measured goodput)")
    else:
        tie = f" (a tie: {', '.join(result['ties'])} reach the same goodput)" if len(result["ties"]) > 1 else ""
        lines.append(
            f"best P:D split under the SLO ({slo}): {best['prefill']}:{best['decode']} at "
            f"{best['goodput_rps']:.2f} r/s of goodput{tie}"
        )
        if colo is not None and colo["goodput_rps"] is not None:
            beats = "beats" if colo["goodput_rps"] > best["goodput_rps"] else "does not beat"
            lines.append(f"colocated on the same GPUs: {colo['goodput_rps']:.2f} r/s ({beats} the best split)")
    return lines
