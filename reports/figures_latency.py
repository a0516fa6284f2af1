"""Latency figures: CDFs, percentile bars with CI whiskers, SLO attainment curves, per-tenant latency."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports.downsample import cdf_points, finite
from reports.load import EngineRun
from reports.style import base_layout

# (key, title, unit, scale from seconds)
CDF_METRICS = (
    ("ttft", "TTFT (time to first token)", "ms", 1e3),
    ("tpot", "TPOT (time per output token)", "ms", 1e3),
    ("e2e", "E2E (end-to-end latency)", "s", 1.0),
    ("itl", "ITL (every inter-token gap)", "ms", 1e3),
)


def itl_values(er: EngineRun) -> np.ndarray:
    """Every gap between consecutive tokens of the same successful request (pooled), in seconds."""
    ok = er.latencies["succeeded"].to_numpy()
    t, owner = er.tokens.flat, er.tokens.owner
    if t.size < 2:
        return np.empty(0)
    same = (owner[1:] == owner[:-1]) & ok[owner[1:]]
    return np.diff(t)[same]


def metric_values(er: EngineRun, key: str) -> np.ndarray:
    return itl_values(er) if key == "itl" else er.latencies[key].to_numpy(dtype=np.float64)


def latency_cdfs(series: list[EngineRun], colors: dict[str, str]) -> go.Figure:
    fig = make_subplots(rows=2, cols=2, subplot_titles=[m[1] for m in CDF_METRICS], vertical_spacing=0.16)
    for i, (key, _, unit, scale) in enumerate(CDF_METRICS):
        row, col = divmod(i, 2)
        for er in series:
            values = finite(metric_values(er, key))
            x, p = cdf_points(values[values > 0] * scale)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=p,
                    mode="lines",
                    name=er.label,
                    legendgroup=er.label,
                    showlegend=i == 0,
                    line={"color": colors[er.label], "width": 2, "shape": "hv"},
                    hovertemplate=f"{er.label}<br>%{{x:.4g}} {unit}<br>share ≤ x: %{{y:.4f}}<extra></extra>",
                ),
                row=row + 1,
                col=col + 1,
            )
        fig.update_xaxes(type="log", title_text=unit, row=row + 1, col=col + 1)
        fig.update_yaxes(
            title_text="share of requests" if key != "itl" else "share of gaps",
            range=[0, 1.02],
            row=row + 1,
            col=col + 1,
        )
    return base_layout(fig, height=640)


def percentile_bars(series: list[EngineRun], colors: dict[str, str]) -> go.Figure:
    fig = make_subplots(rows=2, cols=2, subplot_titles=[m[1] for m in CDF_METRICS], vertical_spacing=0.16)
    for i, (key, _, unit, scale) in enumerate(CDF_METRICS):
        row, col = divmod(i, 2)
        for er in series:
            table = ((er.summary.get("latency") or {}).get(key) or {}).get("percentiles") or {}
            labels = list(table)
            value = np.array([_num(table[k].get("value")) for k in labels]) * scale
            low = np.array([_num(table[k].get("ci_low")) for k in labels]) * scale
            high = np.array([_num(table[k].get("ci_high")) for k in labels]) * scale
            fig.add_trace(
                go.Bar(
                    x=labels,
                    y=value,
                    name=er.label,
                    legendgroup=er.label,
                    showlegend=i == 0,
                    marker_color=colors[er.label],
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": np.nan_to_num(high - value),
                        "arrayminus": np.nan_to_num(value - low),
                        "color": "#333",
                        "thickness": 1.2,
                    },
                    customdata=np.stack([low, high], axis=-1),
                    hovertemplate=f"{er.label} %{{x}}: %{{y:.4g}} {unit}<br>95% CI [%{{customdata[0]:.4g}}, "
                    f"%{{customdata[1]:.4g}}]<extra></extra>",
                ),
                row=row + 1,
                col=col + 1,
            )
        fig.update_yaxes(title_text=unit, row=row + 1, col=col + 1)
        auto_log(fig, row + 1, col + 1, unit)
    fig.update_layout(barmode="group", bargap=0.25)
    return base_layout(fig, height=640)


def auto_log(fig: go.Figure, row: int, col: int, unit: str) -> None:
    """Log y axis for a bar subplot whose bars are more than 20x apart (else the short ones vanish)."""
    tops = np.array([b for tr in fig.select_traces(row=row, col=col) for b in np.asarray(tr.y, dtype=float)])
    tops = tops[np.isfinite(tops) & (tops > 0)]
    if tops.size and tops.max() / tops.min() > 20:
        fig.update_yaxes(type="log", title_text=f"{unit} (log)", row=row, col=col)


def _num(v: Any) -> float:
    return float(v) if v is not None else np.nan


def _slo_limits(er: EngineRun) -> dict[str, float | None]:
    limits = ((er.summary.get("slo") or {}).get("slo")) or {}
    return {k: limits.get(k) for k in ("ttft_s", "tpot_s", "e2e_s")}


def required_scale(er: EngineRun, limits: dict[str, float | None]) -> np.ndarray:
    """Per request, the smallest factor k such that it meets the SLO with every limit multiplied by k
    (inf for failed requests). A request with no TPOT (one token) cannot violate the TPOT limit."""
    lat = er.latencies
    need = np.zeros(len(lat))
    for key, col in (("ttft_s", "ttft"), ("tpot_s", "tpot"), ("e2e_s", "e2e")):
        limit = limits.get(key)
        if limit:
            ratio = lat[col].to_numpy(dtype=np.float64) / limit
            need = np.fmax(need, np.where(np.isnan(ratio) & (col == "tpot"), 0.0, ratio))
    return np.where(lat["succeeded"].to_numpy() & np.isfinite(need), need, np.inf)


def _attainment_curve(values: np.ndarray, eligible: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Share of all requests that are eligible and have value <= each grid point."""
    v = np.sort(values[eligible & np.isfinite(values)])
    return np.searchsorted(v, grid, side="right") / max(1, values.size)


def slo_curves(series: list[EngineRun], colors: dict[str, str]) -> go.Figure:
    """SLO attainment (share of all requests meeting the SLO) as one limit varies, the others held at
    the run's SLO; and as every limit is scaled together."""
    limits = _slo_limits(series[0]) if series else {}
    titles = [
        "vary the TTFT limit (TPOT at its SLO)",
        "vary the TPOT limit (TTFT at its SLO)",
        "scale every limit by k",
    ]
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.07)
    for er in series:
        lat = er.latencies
        ok = lat["succeeded"].to_numpy()
        ttft, tpot = lat["ttft"].to_numpy(dtype=np.float64), lat["tpot"].to_numpy(dtype=np.float64)
        e2e_ok = ok if not limits.get("e2e_s") else ok & (lat["e2e"].to_numpy() <= limits["e2e_s"])
        tpot_ok = ok if not limits.get("tpot_s") else ok & ((tpot <= limits["tpot_s"]) | np.isnan(tpot))
        ttft_ok = ok if not limits.get("ttft_s") else ok & (ttft <= limits["ttft_s"])
        scale = required_scale(er, limits)
        panels = (
            (ttft * 1e3, tpot_ok & e2e_ok, "TTFT limit %{x:.4g} ms"),
            (np.where(np.isnan(tpot), 0.0, tpot) * 1e3, ttft_ok & e2e_ok, "TPOT limit %{x:.4g} ms"),
            (scale, np.ones(len(lat), dtype=bool), "limits × %{x:.3g}"),
        )
        marks = (limits.get("ttft_s"), limits.get("tpot_s"), 1.0)
        for c, (values, eligible, what) in enumerate(panels):
            mark = marks[c] * (1e3 if c < 2 else 1.0) if marks[c] else None
            grid = _grid(values[np.isfinite(values)], mark)
            fig.add_trace(
                go.Scatter(
                    x=grid,
                    y=_attainment_curve(values, eligible, grid),
                    mode="lines",
                    name=er.label,
                    legendgroup=er.label,
                    showlegend=c == 0,
                    line={"color": colors[er.label], "width": 2},
                    hovertemplate=f"{er.label}<br>{what}<br>attainment %{{y:.3f}}<extra></extra>",
                ),
                row=1,
                col=c + 1,
            )
    for c, x in enumerate((limits.get("ttft_s"), limits.get("tpot_s"), 1.0)):
        if x:  # a vertical line as a trace: shapes and annotations misplace on log axes
            x = x * (1e3 if c < 2 else 1.0)
            fig.add_trace(
                go.Scatter(
                    x=[x, x],
                    y=[0, 1.02],
                    mode="lines",
                    line={"color": "#555", "dash": "dash", "width": 1},
                    name="the run's SLO",
                    legendgroup="slo",
                    showlegend=c == 0,
                    hovertemplate=f"SLO as set: {x:.4g}<extra></extra>",
                ),
                row=1,
                col=c + 1,
            )
    fig.update_xaxes(type="log")
    fig.update_xaxes(title_text="TTFT limit (ms)", row=1, col=1)
    fig.update_xaxes(title_text="TPOT limit (ms)", row=1, col=2)
    fig.update_xaxes(title_text="k (limits × k)", row=1, col=3)
    fig.update_yaxes(range=[0, 1.02], title_text="SLO attainment", row=1, col=1)
    fig.update_yaxes(range=[0, 1.02])
    return base_layout(fig, height=400)


def _grid(values: np.ndarray, mark: float | None = None, points: int = 200) -> np.ndarray:
    v = values[values > 0]
    if mark:
        v = np.append(v, mark)
    if v.size == 0:
        return np.array([1e-3, 1.0])
    lo, hi = float(v.min()), float(v.max())
    return np.geomspace(lo * 0.8, hi * 1.25 if hi > lo else lo * 2, points)


def tenant_figure(series: list[EngineRun], colors: dict[str, str]) -> go.Figure:
    """Per tenant: TTFT p99, E2E p99 and service rate (what Jain's index is taken over)."""
    titles = ("TTFT p99 by tenant", "E2E p99 by tenant", "service rate while backlogged")
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.07)
    for er in series:
        tenants = er.summary.get("tenants") or {}
        names = sorted(tenants)
        for c, (key, scale) in enumerate((("ttft_p99", 1e3), ("e2e_p99", 1.0), ("service_rate", 1.0))):
            y = [(_num(tenants[t].get(key)) * scale) for t in names]
            fig.add_trace(
                go.Bar(
                    x=names,
                    y=y,
                    name=er.label,
                    legendgroup=er.label,
                    showlegend=c == 0,
                    marker_color=colors[er.label],
                    hovertemplate=f"{er.label} %{{x}}: %{{y:.4g}}<extra></extra>",
                ),
                row=1,
                col=c + 1,
            )
    for c, unit in enumerate(("ms", "s", "units/s")):
        fig.update_yaxes(title_text=unit, row=1, col=c + 1)
        auto_log(fig, 1, c + 1, unit)
    fig.update_layout(barmode="group")
    return base_layout(fig, height=380)
