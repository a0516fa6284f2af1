"""Run a sweep: one run directory per offered rate under the sweep directory, and `sweep.json` beside them.

sweep.json is rewritten after every run, so an interrupted sweep keeps every point it measured.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.collector import survivors_frozen
from harness.errors import HarnessInputError
from harness.sweep.point import Point, measure_point
from harness.sweep.search import Capacity, bisect, capacity, class_capacity, climb, spread

SWEEP_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SweepPlan:
    """Which rates to try (given, or spread below the measured saturation) and how to search for capacity."""

    rates: tuple[float, ...] = ()  # empty: automatic (probe the saturation throughput, then spread below it)
    points: int = 6
    low_fraction: float = 0.1
    spacing: str = "geometric"
    percentile: float = 90.0  # a rate meets the SLO when this share of its requests meet every limit
    search: str = "climb"  # or "binary": narrow each engine's bracket afterwards
    search_steps: int = 4
    tolerance: float = 0.05
    extend: int = 3  # automatic rates: climb up to this many rates past the saturation while an engine keeps up


LoadWorkload = Callable[[float | None], Any]  # offered rate (None: the workload as it is) -> Workload
RunOne = Callable[[Any, Sequence[Any], Path], None]  # workload, engine specs, run directory
RunMany = Callable[[list[tuple[Any, Sequence[Any], Path]]], None]  # several such runs, side by side


@survivors_frozen()  # one scope for all its runs: a full collection never re-scans what an earlier run froze
def run_sweep(
    plan: SweepPlan,
    specs: Sequence[Any],
    load: LoadWorkload,
    run_one: RunOne,
    out: Path,
    slo: Any,
    argv: list[str],
    log: Callable[[str], None] = print,
    run_many: RunMany | None = None,
    batch: int = 1,
) -> dict[str, Any]:
    """Measure, decide, write sweep.json; returns its content. `run_many` and `batch`: the climb measures
    `batch` rates at once through `run_many` (an executor with that many free slots)."""
    by_label = {s.label: s for s in specs}
    points: list[Point] = []
    state: dict[str, Any] = {"saturation": None, "rates": list(plan.rates)}

    def save() -> dict[str, Any]:
        data = _document(plan, list(by_label), points, state, slo, argv)
        tmp = out / "sweep.json.tmp"
        tmp.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
        tmp.replace(out / "sweep.json")
        return data

    def measure_many(rates: Sequence[float], engines: Sequence[str], phase: str) -> list[dict[str, Point]]:
        dirs = [_fresh(out / _dir_name(rate, engines, phase)) for rate in rates]
        for run_dir in dirs:
            run_dir.mkdir(parents=True)  # claimed now: two rates measured at once never share a directory
        started = time.perf_counter()
        jobs = [
            (load(rate), [by_label[e] for e in engines], run_dir) for rate, run_dir in zip(rates, dirs, strict=True)
        ]
        if run_many is not None and len(jobs) > 1:
            run_many(jobs)
        else:
            for job in jobs:
                run_one(*job)
        measured = []
        kept = list(engines)
        for rate, run_dir in zip(rates, dirs, strict=True):
            got = {
                e: measure_point(run_dir, e, rate, phase, plan.percentile, slo, plan.percentile / 100) for e in engines
            }
            points.extend(got[e] for e in kept)  # a rate above an engine's break, measured ahead: not counted
            for e in kept:
                p = got[e]
                log(
                    f"  {phase:6} {rate:>8g} req/s  {p.engine:<14} {'meets' if p.meets else 'breaks'}: {p.why} "
                    f"({time.perf_counter() - started:.0f} s)"
                )
            kept = [e for e in kept if got[e].meets] if phase == "climb" else kept
            measured.append(got)
        save()
        return measured

    def measure(rate: float, engines: Sequence[str], phase: str) -> dict[str, Point]:
        return measure_many([rate], engines, phase)[0]

    out.mkdir(parents=True, exist_ok=True)
    rates = list(plan.rates)
    if not rates:
        n = len(load(None).requests)
        probe = measure(n * 1000.0, list(by_label), "probe")  # every request due within about a millisecond
        saturation = {e: p.whole_run_rps for e, p in probe.items()}
        best = max((v for v in saturation.values() if v), default=None)
        if best is None:
            raise HarnessInputError("sweep: the saturation probe completed no request; nothing to spread rates over")
        rates = spread(best, plan.points, plan.low_fraction, plan.spacing)
        state.update(saturation=saturation, rates=rates)
        log(
            f"saturation: {', '.join(f'{e} {v:.3g} req/s' for e, v in saturation.items() if v)}; "
            f"rates {', '.join(f'{r:g}' for r in rates)}"
        )
    climbed = climb(
        rates, list(by_label), measure, extend=0 if plan.rates else plan.extend, measure_many=measure_many, batch=batch
    )
    if plan.search == "binary":
        for engine in by_label:
            bisect(engine, climbed, measure, plan.search_steps, plan.tolerance)
    return save()


def _document(
    plan: SweepPlan, engines: list[str], points: list[Point], state: dict[str, Any], slo: Any, argv: list[str]
) -> dict[str, Any]:
    capacities = {e: capacity(points, e) for e in engines}
    curve = {
        e: [
            {
                k: asdict(p)[k]
                for k in (
                    "rate",
                    "achieved_rps",
                    "output_tok_s",
                    "ttft_s",
                    "tpot_s",
                    "e2e_s",
                    "attainment",
                    "goodput_rps",
                    "jain",
                    "worst_slowdown",
                    "vtc_gap",
                    "meets",
                )
            }
            for p in sorted((p for p in points if p.engine == e and p.phase != "probe"), key=lambda p: p.rate)
        ]
        for e in engines
    }
    return _clean(
        {
            "schema_version": SWEEP_SCHEMA_VERSION,
            "command": argv,
            "engines": engines,
            "plan": asdict(plan),
            "slo": slo.to_json(),
            "criterion": f"a rate meets the SLO when no stop rule fired and >= {plan.percentile:g}% of its requests "
            f"met every SLO limit; latencies at p{plan.percentile:g}",
            "saturation_rps": state["saturation"],
            "rates": state["rates"],
            "points": [asdict(p) for p in points],
            "curve": curve,
            "capacity": {e: asdict(c) for e, c in capacities.items()},
            "capacity_by_class": _class_capacities(plan, engines, points),
        }
    )


def _class_capacities(plan: SweepPlan, engines: list[str], points: list[Point]) -> dict[str, Any] | None:
    names = sorted({name for p in points for name in (p.classes or {})})
    if not names:
        return None
    share = plan.percentile / 100
    return {e: {n: asdict(class_capacity(points, e, n, share)) for n in names} for e in engines}


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _dir_name(rate: float, engines: Sequence[str], phase: str) -> str:
    if phase == "probe":
        return "probe"
    if phase == "search":
        return f"search-{'-'.join(engines)}-rate-{rate:g}"
    return f"rate-{rate:g}"


def _fresh(path: Path) -> Path:
    """A new directory: records.jsonl is appended to, so a rerun into an old one would mix two runs."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def capacity_lines(data: dict[str, Any]) -> list[str]:
    lines = []
    for engine, by_class in (data.get("capacity_by_class") or {}).items():
        for name, cap in by_class.items():
            c = Capacity(**cap)
            at_least = "at least " if c.bound == "at_least" else ""
            what = "none: below the lowest rate tried" if c.rate is None else f"{at_least}{c.rate:g} req/s"
            lines.append(f"capacity {engine} class {name}: {what}")
    for engine, cap in data["capacity"].items():
        c = Capacity(**cap)
        if c.rate is None:
            tail = f"below the lowest rate tried ({c.high:g} req/s)" if c.high is not None else "not measured"
            lines.append(f"capacity {engine}: none: {tail}")
        elif c.bound == "at_least":
            lines.append(f"capacity {engine}: at least {c.rate:g} req/s (no rate tried broke the SLO)")
        else:
            lines.append(f"capacity {engine}: {c.rate:g} req/s (next rate tried, {c.high:g} req/s, broke the SLO)")
    return lines
