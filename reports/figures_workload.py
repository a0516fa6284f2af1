"""The workload that was replayed: arrival rate over time per tenant, prompt and output length histograms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports.downsample import rate_per_bin, time_edges
from reports.load import RunData
from reports.style import PALETTE, base_layout


def workload_frame(run: RunData) -> pd.DataFrame:
    """arrival_s, input_tokens, output_tokens, tenant: requests.jsonl, else the first engine's records."""
    sched = run.schedule
    if sched is not None and not sched.empty and {"arrival_s", "input_tokens", "output_tokens"} <= set(sched.columns):
        out = sched[["arrival_s", "input_tokens", "output_tokens"]].copy()
        out["tenant"] = sched["tenant"].astype(str) if "tenant" in sched else "default"
        return out
    engines = run.primary()
    if not engines or engines[0].records.empty:
        return pd.DataFrame({"arrival_s": [], "input_tokens": [], "output_tokens": [], "tenant": []})
    rec = engines[0].records
    return pd.DataFrame(
        {
            "arrival_s": rec["t_scheduled"],
            "input_tokens": rec["prompt_tokens"],
            "output_tokens": rec["max_tokens"].where(rec["max_tokens"] > 0, rec["output_tokens"]),
            "tenant": rec["tenant"].astype(str),
        }
    )


def _hist(values: np.ndarray, bins: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return np.empty(0), np.empty(0), np.empty(0)
    hi = float(v.max()) if v.max() > v.min() else float(v.min()) + 1
    counts, edges = np.histogram(v, bins=bins, range=(float(v.min()), hi))
    return (edges[:-1] + edges[1:]) / 2, counts, np.diff(edges)


def workload_figure(run: RunData) -> go.Figure:
    wl = workload_frame(run)
    titles = ("arrival rate (requests/s) by tenant", "prompt length (tokens)", "output length (tokens)")
    fig = make_subplots(
        rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.07, column_widths=[0.44, 0.28, 0.28]
    )
    arrivals = wl["arrival_s"].to_numpy(dtype=np.float64)
    edges = time_edges(float(arrivals.min()), float(arrivals.max()), bins=min(200, max(10, arrivals.size // 20)))
    mid = (edges[:-1] + edges[1:]) / 2
    for i, (tenant, group) in enumerate(wl.groupby("tenant", sort=True)):
        fig.add_trace(
            go.Scatter(
                x=mid,
                y=rate_per_bin(group["arrival_s"].to_numpy(dtype=np.float64), edges),
                mode="lines",
                stackgroup="arrivals",
                name=str(tenant),
                line={"color": PALETTE[(i + 2) % len(PALETTE)]},
                hovertemplate=f"{tenant}<br>t=%{{x:.2f}} s<br>%{{y:.3g}} req/s<extra></extra>",
            ),
            row=1,
            col=1,
        )
    for c, col in ((2, "input_tokens"), (3, "output_tokens")):
        x, counts, width = _hist(wl[col].to_numpy(dtype=np.float64))
        fig.add_trace(
            go.Bar(
                x=x,
                y=counts,
                width=width,
                marker_color="#52606D",
                showlegend=False,
                name=col,
                hovertemplate="%{x:.0f} tokens: %{y} requests<extra></extra>",
            ),
            row=1,
            col=c,
        )
        fig.update_xaxes(title_text="tokens", row=1, col=c)
        fig.update_yaxes(title_text="requests", row=1, col=c)
    fig.update_xaxes(title_text="scheduled arrival (s)", row=1, col=1)
    return base_layout(fig, height=360)


def workload_stats(run: RunData) -> dict[str, str]:
    """A few plain numbers about the workload, for the table beside the figure."""
    wl = workload_frame(run)
    arrivals = wl["arrival_s"].to_numpy(dtype=np.float64)
    span = float(arrivals.max() - arrivals.min()) if arrivals.size else 0.0
    stats = {
        "requests": f"{len(wl):,}",
        "duration of arrivals": f"{span:.2f} s",
        "mean arrival rate": f"{(len(wl) - 1) / span:.3g} req/s" if span > 0 else "all at once (burst)",
        "tenants": ", ".join(f"{t} ({n:,})" for t, n in wl["tenant"].value_counts().sort_index().items()),
    }
    for col, name in (("input_tokens", "prompt tokens"), ("output_tokens", "output tokens")):
        v = wl[col].to_numpy(dtype=np.float64)
        p50, p99 = np.percentile(v, [50, 99])
        stats[name] = f"mean {v.mean():.1f}, p50 {p50:.0f}, p99 {p99:.0f}, max {v.max():.0f}"
    stats["fingerprint"] = run.fingerprint or "not recorded"
    return stats
