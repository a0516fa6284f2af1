"""One look for every figure: system fonts, white background, a fixed colour per series."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
# Static batching warm, continuous cool, further series from a colour-blind-safe palette.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
PHASE_COLORS = {
    "queued": "#B0B7C3",
    "prefill": "#E69F00",
    "decode": "#0072B2",
    "held": "#F4A6A6",
}
PLOTLY_CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}
_AXIS = {"gridcolor": "#EBF0F8", "linecolor": "#D9E2EC", "zerolinecolor": "#D9E2EC", "automargin": True}
# A small template of our own: plotly's named templates add ~7 KB to every figure and cost time to copy.
TEMPLATE = go.layout.Template(
    layout={
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": list(PALETTE),
        "hovermode": "closest",
        "xaxis": _AXIS,
        "yaxis": _AXIS,
    }
)


def series_colors(labels: list[str]) -> dict[str, str]:
    """The first "static" engine orange, the first "continuous" blue, the rest in palette order."""
    colors: dict[str, str] = {}
    free = list(PALETTE)
    for label in labels:
        engine = label.rsplit("/", 1)[-1]
        for word, color in (("static", "#E69F00"), ("continuous", "#0072B2")):
            if word in engine and color in free and label not in colors:
                colors[label] = color
                free.remove(color)
    for i, label in enumerate(labels):
        if label not in colors:
            colors[label] = free.pop(0) if free else PALETTE[i % len(PALETTE)]
    return colors


def base_layout(fig: go.Figure, *, height: int = 420, title: str | None = None, legend: bool = True) -> go.Figure:
    fig.update_layout(
        template=TEMPLATE,
        font={"family": FONT, "size": 12, "color": "#1f2933"},
        height=height,
        margin={"l": 60, "r": 20, "t": 90 if title else 70, "b": 50},
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}} if title else None,
        # The legend gets the container's top strip, above any subplot titles.
        legend={"orientation": "h", "yref": "container", "y": 0.995, "yanchor": "top", "xanchor": "left", "x": 0.0},
        showlegend=legend,
        hoverlabel={"font": {"family": FONT}},
    )
    fig.update_annotations(font={"family": FONT, "size": 13})
    return fig
