"""How a twin's latencies move with the price of its steps (`sim fidelity --sensitivity F`): the same seeded twins
at step_scale 1 - F, 1 and 1 + F, and per latency metric the elasticity of the twins' median m to the price,

    elasticity = (m(1 + F) - m(1 - F)) / m(1) / (2 F)

1.0: the metric moves in proportion to the price, as a TPOT should; 0: it ignores the price; None where m(1) is 0
or a median is missing. A metric with |elasticity| > TIPPING sits on a queueing tipping point: its twin's error
measures where the tipping point lies, not how well the simulator prices steps. Pure functions of summaries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.metrics.simulation import FIDELITY_METRICS, twins_median

# A metric moving three times faster than the price is on a tipping point: the machine's moment moves a trial's
# step price by several percent (+-8% over 15-30 s on the 2-core machine, v9's log), and at three times that a price
# error of a few percent moves the metric by more than the 10% a median is judged by.
TIPPING = 3.0

LATENCY = tuple(m for m in FIDELITY_METRICS if m.unit == "s")  # a throughput follows the schedule as much

Summaries = Sequence[Mapping[str, Any]]


def elasticity(low: float | None, plain: float | None, high: float | None, fraction: float) -> float | None:
    """(high - low) / plain / (2 fraction): the metric's relative move per relative move of the price."""
    if low is None or high is None or not plain:
        return None
    return (high - low) / plain / (2.0 * fraction)


def sensitivity_block(fraction: float, plain: Summaries, twins_at: Callable[[float], Summaries]) -> dict[str, Any]:
    """`plain`: the twins at step_scale 1; `twins_at(scale)`: the same seeded twins at that scale."""
    low, high = twins_at(1.0 - fraction), twins_at(1.0 + fraction)
    metrics = []
    for metric in LATENCY:
        m = [twins_median(twins, metric.path) for twins in (low, plain, high)]
        e = elasticity(m[0], m[1], m[2], fraction)
        metrics.append(
            {
                "metric": metric.name,
                "scaled_down": m[0],
                "plain": m[1],
                "scaled_up": m[2],
                "elasticity": e,
                "tipping": e is not None and abs(e) > TIPPING,
            }
        )
    return {"fraction": fraction, "threshold": TIPPING, "metrics": metrics}


def sensitivity_text(block: Mapping[str, Any]) -> str:
    """Each latency metric's elasticity, then the tipping ones each with how far a price error of F moves it (half
    the move from x(1-F) to x(1+F)) and its three medians."""
    f = block["fraction"]
    text = (
        f"step price x{1 - f:g} and x{1 + f:g}, elasticity (1: in proportion to the price): {elasticity_cells(block)}"
    )
    tipping = [m for m in block["metrics"] if m["tipping"]]
    if tipping:
        each = ", ".join(
            f"{m['metric']} by {abs(m['elasticity']) * f:.0%} ({m['scaled_down']:.3g}, {m['plain']:.3g}, "
            f"{m['scaled_up']:.3g} s)"
            for m in tipping
        )
        text += (
            f"; on a tipping point (|elasticity| > {block['threshold']:g}): a price error of {f:.0%} moves {each}: "
            "there the twin's error measures the tipping point, not the simulator"
        )
    return text


def elasticity_cells(block: Mapping[str, Any]) -> str:
    """`TTFT p50 17.61, TTFT p99 11.00, ...` (-: not known)."""
    return ", ".join(f"{m['metric']} {_fmt(m['elasticity'])}" for m in block["metrics"])


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
