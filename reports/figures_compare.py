"""Comparison figure: relative change of each metric's median, b against a, with its 95% CI."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from reports.compare import METRIC_NAMES, Comparison
from reports.style import PALETTE, base_layout


def comparison_figure(comparisons: list[Comparison]) -> go.Figure | None:
    """A forest plot: one row per metric, one marker per comparison at its median difference (paired: the
    median of per-request b - a; unpaired: median b - median a) over a's median; whiskers are the
    difference's CI over the same denominator. Left of zero: b is faster."""
    if not comparisons:
        return None
    fig = go.Figure()
    for i, c in enumerate(comparisons):
        t = c.table
        base = t["median_a"].where(t["median_a"] != 0)
        rel = (t["rel_change"] * 100).to_numpy(dtype=np.float64)  # the judge's relative change
        lo = (t["ci_low"] / base * 100).to_numpy(dtype=np.float64)
        hi = (t["ci_high"] / base * 100).to_numpy(dtype=np.float64)
        names = [METRIC_NAMES.get(str(m), str(m)) for m in t.index]
        kind = "paired" if c.kind == "paired" else "unpaired"
        fig.add_trace(
            go.Scatter(
                x=rel,
                y=names,
                mode="markers",
                name=f"{c.title} ({kind})",
                marker={"size": 10, "color": PALETTE[(i + 2) % len(PALETTE)], "symbol": "diamond"},
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": np.nan_to_num(hi - rel),
                    "arrayminus": np.nan_to_num(rel - lo),
                    "thickness": 1.5,
                },
                customdata=np.stack([lo, hi, t["p_holm"].to_numpy(dtype=np.float64)], axis=-1),
                hovertemplate="%{y}: %{x:+.1f}% [%{customdata[0]:+.1f}%, %{customdata[1]:+.1f}%]"
                "<br>Holm-adjusted p = %{customdata[2]:.2g}<extra>" + c.title + "</extra>",
            )
        )
    fig.add_vline(x=0, line_color="#555", line_dash="dot")
    fig.update_xaxes(title_text="median difference b - a, as % of a's median (negative: b is lower / faster)")
    fig.update_yaxes(autorange="reversed")
    return base_layout(fig, height=160 + 60 * len(comparisons[0].table))
