"""The second verdict a suite may register (`[judge] at_trial_speed = true`), reported beside the plain one and
never in its place: each real trial against twins run at that trial's own measured speed.

For trial t of a pair (over its rounds, or the trials of one run), with speed s_t against the fit runs
(`harness.fidelity_suite.speeds`; > 0: slower), the pair's seeded twins are run as the plain verdict runs them but
with every step's price x (1 + s_t) (`[judge] at_trial_speed_shapes = "measured"`: only the steps of the shapes the
profile's fit runs have a level of, the shapes s_t was measured on; every other step at its plain price). Per
metric:
    e_t    = (median of those twins - trial t's real value) / trial t's real value
    error  = median over t of e_t
    spread = max over t of |e_t - error|
and the outcome is the plain verdict's judge, `fidelity_outcome(error, spread, tolerance, within_spread=p99)`,
with the suite's tolerances. The pair's at-speed verdict: fails when any metric fails, holds when all hold, else
cannot tell; a trial of unknown speed makes it cannot tell. This verdict is conditional on a number measured from
the real trial itself."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from harness.fidelity_suite.rule import Simulate, verdict_fields
from harness.fidelity_suite.spec import Suite
from harness.fidelity_suite.speeds import Speeds
from harness.judge.fidelity import pair_outcome


def trial_values(real: dict[str, Any], trials: dict[str, Any] | None) -> dict[str, list[float | None]]:
    """Per fidelity metric, each trial's real value (metrics.json's repeat block `values`, merged over rounds);
    a run without one: its one summary value."""
    from harness.metrics.simulation import FIDELITY_METRICS, fidelity_rows

    out = {}
    for metric, row in zip(FIDELITY_METRICS, fidelity_rows(real), strict=True):
        values = ((trials or {}).get(metric.trials_key) or {}).get("values")
        out[metric.name] = [float(v) for v in values] if values else [row["real"]]
    return out


def _unknown(speeds: Speeds | None, values: dict[str, list[float | None]]) -> str | None:
    """Why the trials' speeds cannot place the twins (None: they can)."""
    if speeds is None:
        return "a round keeps neither its step traces nor a speeds.json: its trials' speeds are unknown"
    if None in speeds:
        return f"trial {speeds.index(None) + 1}'s speed is unknown (no step of a shape the fit runs had)"
    counts = {len(v) for v in values.values()}
    if counts != {len(speeds)}:
        return f"{len(speeds)} trial speeds for {max(counts)} trials"
    return None


def _error(simulated: float | None, real: float | None) -> float | None:
    return (simulated - real) / real if real not in (None, 0.0) and simulated is not None else None


def at_speed_block(
    suite: Suite,
    run: Path,
    engine: dict[str, Any],
    profile: Path,
    real: dict[str, Any],
    trials: dict[str, Any] | None,
    speeds: Speeds | None,
    simulate: Simulate,
    seeds: int = 5,
    noise: bool = True,
    elasticities: dict[str, float | None] | None = None,
) -> dict[str, Any]:
    """The pair's at-speed block: its trial speeds, a row a metric (error, spread, per-trial errors, verdict), its
    verdict, and why it cannot tell when a speed is unknown. `elasticities`: each latency's at the fitted price, for
    the suite's tipping rule (the plain verdict's, applied here too)."""
    from harness.metrics.simulation import fidelity_rows

    block: dict[str, Any] = {"speeds": speeds, "rows": [], "verdict": "cannot_tell"}
    values = trial_values(real, trials)
    why = _unknown(speeds, values)
    if why is not None:
        block["why"] = why
        return block
    assert speeds is not None  # _unknown says why otherwise
    simulated: dict[float, dict[str, float | None]] = {}  # speed -> each metric's twins' median
    # "all" is not passed: the twins' spec is then the text it was before the option (every committed suite's)
    shapes = {"step_scale_shapes": suite.at_trial_speed_shapes} if suite.at_trial_speed_shapes != "all" else {}
    for speed in dict.fromkeys(s for s in speeds if s is not None):
        twins = [
            simulate(run, engine, profile, noise=noise, seed=s, headline=True, step_scale=1.0 + speed, **shapes)
            for s in range(seeds if noise else 1)
        ]
        simulated[speed] = {r["metric"]: r["simulated"] for r in fidelity_rows(real, *twins)}
    for metric, reals in values.items():
        errors = [_error(simulated[s][metric], v) for s, v in zip(speeds, reals, strict=True) if s is not None]
        block["rows"].append(_row(suite, metric, errors, (elasticities or {}).get(metric)))
    block["verdict"] = pair_outcome(r["verdict"] for r in block["rows"])
    return block


def _row(suite: Suite, metric: str, errors: list[float | None], elasticity: float | None = None) -> dict[str, Any]:
    """error: the median of the trials' errors; spread: the furthest trial's error from it (None: a trial has no
    error)."""
    known = [e for e in errors if e is not None]
    error = statistics.median(known) if known and len(known) == len(errors) else None
    spread = max(abs(e - error) for e in known) if error is not None else None
    return {
        "metric": metric,
        "error": error,
        "spread": spread,
        "trial_errors": errors,
        **verdict_fields(metric, error, spread, suite.targets, suite.tipping, elasticity),
    }


def not_measured() -> dict[str, Any]:
    """The block of a pair without a real run."""
    return {"speeds": None, "rows": [], "verdict": "cannot_tell", "why": "not measured"}
