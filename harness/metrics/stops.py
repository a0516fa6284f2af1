"""One line saying why a run stopped early, from its `stopped_early` entry in metrics.json (console and report)."""

from __future__ import annotations

from typing import Any


def describe_stop(stop: dict[str, Any]) -> str:
    """The rule, when it fired (run clock) and what it saw; over-saturation states its slopes and their bounds."""
    rule = stop.get("rule", "?")
    evidence = stop.get("evidence")
    if rule == "over_saturated" and isinstance(evidence, dict):
        flight, ttft = evidence["in_flight"], evidence["ttft"]
        start, end = evidence["window_s"]
        return (
            f"over-saturated at {end:.3g} s: over {start:.3g}-{end:.3g} s requests in flight grew "
            f"{flight['slope_per_s']:.3g}/s (>= {flight['lower_bound_per_s']:.3g}/s) and TTFT "
            f"{ttft['slope_per_s'] * 1e3:.3g} ms/s (>= {ttft['lower_bound_per_s'] * 1e3:.3g} ms/s) at "
            f"{evidence['confidence']:.1%} one-sided confidence"
        )
    value, limit = stop.get("value"), stop.get("limit")
    return f"{rule} = {_number(value)} (limit {_number(limit)})"


def _number(x: Any) -> str:
    """Four significant digits: a limit computed from a calibration (31.774049312545156) reads as 31.77."""
    return f"{x:.4g}" if isinstance(x, int | float) and not isinstance(x, bool) else "?"
