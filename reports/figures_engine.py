"""What the engines did over time: throughput and queues, batch occupancy, and a request timeline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports.downsample import (
    DETAIL_STEPS,
    GANTT_REQUESTS,
    TIME_BINS,
    level_per_bin,
    rate_per_bin,
    steps_mean_per_bin,
    time_edges,
)
from reports.load import EngineRun
from reports.steps import SAMPLE_CHUNKS
from reports.style import PHASE_COLORS, base_layout


def _span(series: list[EngineRun]) -> tuple[float, float]:
    starts = [float(er.records["t_scheduled"].min()) for er in series]
    ends = [float(er.done.max()) for er in series]
    return min(starts), max(ends)


def _steady(er: EngineRun) -> tuple[float, float] | None:
    steady = ((er.summary.get("throughput") or {}).get("steady")) or {}
    if steady.get("start") is None or steady.get("end") is None:
        return None
    return float(steady["start"]), float(steady["end"])


def throughput_over_time(series: list[EngineRun], colors: dict[str, str]) -> go.Figure:
    """Output tokens/s, requests waiting for admission, and requests in the engine, per time bin."""
    requests = max(len(er.records) for er in series)
    edges = time_edges(*_span(series), bins=int(np.clip(requests // 20, 30, TIME_BINS)))
    mid = (edges[:-1] + edges[1:]) / 2
    titles = (
        "output tokens per second",
        "requests queued (arrived, not yet admitted)",
        "requests in the engine (admitted, not done)",
    )
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.08)
    for er in series:
        rec = er.records
        ok = er.latencies["succeeded"].to_numpy()
        tokens = er.tokens.flat[ok[er.tokens.owner]] if er.tokens.flat.size else er.tokens.flat
        done = er.done.to_numpy(dtype=np.float64)
        admitted = rec["t_admitted"].to_numpy(dtype=np.float64)
        queued_until = np.where(np.isnan(admitted), done, admitted)
        rows = (
            rate_per_bin(tokens, edges),
            level_per_bin(rec["t_scheduled"].to_numpy(dtype=np.float64), queued_until, edges),
            level_per_bin(admitted, done, edges),
        )
        for r, y in enumerate(rows):
            fig.add_trace(
                go.Scatter(
                    x=mid,
                    y=y,
                    mode="lines",
                    name=er.label,
                    legendgroup=er.label,
                    showlegend=r == 0,
                    line={"color": colors[er.label], "width": 1.6, "shape": "hvh"},
                    hovertemplate=f"{er.label}<br>t=%{{x:.2f}} s<br>%{{y:.4g}}<extra></extra>",
                ),
                row=r + 1,
                col=1,
            )
    window = _steady(series[0]) if series else None
    if window:
        for r in range(3):
            fig.add_vrect(x0=window[0], x1=window[1], fillcolor="#9aa5b1", opacity=0.08, line_width=0, row=r + 1, col=1)
    fig.update_xaxes(title_text="seconds since the run started (shaded: steady window)", row=3, col=1)
    fig.update_yaxes(title_text="tok/s", row=1, col=1)
    fig.update_yaxes(title_text="requests", row=2, col=1)
    fig.update_yaxes(title_text="requests", row=3, col=1)
    return base_layout(fig, height=700)


def _traced(series: list[EngineRun]) -> list[EngineRun]:
    return [er for er in series if er.trace is not None and not er.trace.empty]


def _share_text(er: EngineRun) -> str:
    util = er.summary.get("utilisation") or {}
    share, idle = util.get("mean_running_share"), util.get("idle_slot_share")
    parts = [er.label]
    if share is not None:
        parts.append(f"slots computing {share:.0%} of busy time")
    if idle:
        parts.append(f"held idle {idle:.0%}")
    return " · ".join(parts)


def occupancy_overview(series: list[EngineRun], colors: dict[str, str]) -> go.Figure | None:
    """Slots computing and slots held idle (finished members of a static batch), time-weighted per bin
    over the time the trace (or its sampled runs of steps) covers."""
    traced = _traced(series)
    if not traced:
        return None
    start = min(float(er.trace.spans[:, 0].min()) for er in traced)
    end = max(float(er.trace.spans[:, 1].max()) for er in traced)
    edges = time_edges(start, end)
    mid = (edges[:-1] + edges[1:]) / 2
    fig = make_subplots(
        rows=len(traced),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=[_share_text(er) for er in traced],
    )
    for r, er in enumerate(traced):
        st, spans = er.trace.frame, er.trace.spans
        t0, t1 = st["t_start"].to_numpy(dtype=np.float64), st["t_end"].to_numpy(dtype=np.float64)
        covered = level_per_bin(spans[:, 0], spans[:, 1], edges)  # share of each bin the trace covers
        covered = np.where(covered > 1e-9, covered, np.nan)
        running = steps_mean_per_bin(t0, t1, st["num_running"].to_numpy(dtype=np.float64), edges) / covered
        held = steps_mean_per_bin(t0, t1, st["idle_slots"].to_numpy(dtype=np.float64), edges) / covered
        slots = int(st["max_slots"].max())
        stacked = (
            (running, "slots computing", "computing", colors[er.label], f"computing %{{y:.2f}} of {slots}"),
            (held, "slots held idle", "held", PHASE_COLORS["held"], "held idle %{y:.2f}"),
        )
        for y, name, group, color, hover in stacked:
            fig.add_trace(
                go.Scatter(
                    x=mid,
                    y=y,
                    mode="lines",
                    stackgroup=f"s{r}",
                    name=name,
                    legendgroup=group,
                    showlegend=r == 0,
                    line={"color": color, "width": 0.5},
                    hovertemplate=f"{er.label}<br>t=%{{x:.2f}} s<br>{hover}<extra></extra>",
                ),
                row=r + 1,
                col=1,
            )
        fig.add_hline(y=slots, line_dash="dot", line_color="#555", row=r + 1, col=1)
        fig.update_yaxes(title_text="slots", range=[0, slots * 1.08], row=r + 1, col=1)
    fig.update_xaxes(
        title_text="seconds since the run started (mean per bin; dotted: slot limit)", row=len(traced), col=1
    )
    return base_layout(fig, height=max(300, 230 * len(traced) + 80))


def overview_note(series: list[EngineRun]) -> str:
    sampled = [er for er in _traced(series) if not er.trace.exact]
    if not sampled:
        return "Whole run, every step, time-weighted mean per bin."
    return (
        f"Whole run, time-weighted mean per bin. Long traces ({', '.join(er.label for er in sampled)}) are "
        f"sampled: {SAMPLE_CHUNKS} evenly spaced runs of consecutive steps, each bin averaged over the time "
        "they cover."
    )


def occupancy_detail(series: list[EngineRun], colors: dict[str, str]) -> tuple[go.Figure | None, str]:
    """Raw steps over a common short window from the steady state: static batches fill, drain to one
    straggler and idle their slots; continuous batching refills freed slots at the next step."""
    traced = _traced(series)
    if not traced:
        return None, ""
    window = _steady(traced[0])
    center = (window[0] + 0.25 * (window[1] - window[0])) if window else float(traced[0].trace.spans[0, 0])
    parts = {er.label: er.trace.window(center, DETAIL_STEPS) for er in traced}
    ends = [float(p["t_end"].max()) - center for p in parts.values() if len(p)]
    width = min(ends) if ends and min(ends) > 0 else 1.0
    fig = make_subplots(
        rows=len(traced), cols=1, shared_xaxes=True, vertical_spacing=0.1, subplot_titles=[er.label for er in traced]
    )
    for r, er in enumerate(traced):
        part = parts[er.label]
        part = part[part["t_start"] <= center + width]
        x = np.append(part["t_start"].to_numpy(), part["t_end"].to_numpy()[-1:]) if len(part) else np.empty(0)
        running = np.append(part["num_running"].to_numpy(), part["num_running"].to_numpy()[-1:])
        holding = running + np.append(part["idle_slots"].to_numpy(), part["idle_slots"].to_numpy()[-1:])
        slots = int(er.trace.frame["max_slots"].max())
        fig.add_trace(
            go.Scatter(
                x=x,
                y=holding,
                mode="lines",
                name="slots held (computing + idle)",
                legendgroup="hold",
                showlegend=r == 0,
                line={"color": "#D55E00", "width": 1, "shape": "hv", "dash": "dot"},
                hovertemplate="t=%{x:.3f} s<br>held %{y}<extra></extra>",
            ),
            row=r + 1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=running,
                mode="lines",
                name="sequences computing",
                legendgroup="run",
                showlegend=r == 0,
                fill="tozeroy",
                line={"color": colors[er.label], "width": 1.2, "shape": "hv"},
                hovertemplate=f"{er.label}<br>t=%{{x:.3f}} s<br>computing %{{y}}<extra></extra>",
            ),
            row=r + 1,
            col=1,
        )
        fig.add_hline(y=slots, line_dash="dot", line_color="#555", row=r + 1, col=1)
        fig.update_yaxes(title_text="slots", range=[0, slots * 1.08], row=r + 1, col=1)
    fig.update_xaxes(
        title_text="seconds since the run started (every engine step; gaps: engine idle)", row=len(traced), col=1
    )
    note = f"{width:.2f} s from t = {center:.2f} s (at most {DETAIL_STEPS} steps per engine)"
    return base_layout(fig, height=max(300, 230 * len(traced) + 80)), note


def _static_like(er: EngineRun) -> bool:
    st = er.steps
    if st is None or st.empty:
        return False
    if "scheduler" in st and (st["scheduler"].astype("str") == "static").any():
        return True
    return bool((st["idle_slots"] > 0).any())


def gantt_sample(series: list[EngineRun], count: int = GANTT_REQUESTS) -> list[str]:
    """`count` consecutive request ids by scheduled arrival, starting a third into the steady window."""
    first = series[0]
    rec = first.records.sort_values("t_scheduled", kind="stable")
    window = _steady(first)
    at = window[0] + (window[1] - window[0]) / 3 if window else float(rec["t_scheduled"].iloc[0])
    start = int(np.clip(np.searchsorted(rec["t_scheduled"].to_numpy(), at), 0, max(0, len(rec) - count)))
    return rec["request_id"].iloc[start : start + count].astype(str).tolist()


def gantt(series: list[EngineRun], colors: dict[str, str]) -> tuple[go.Figure, str]:
    """Per engine, the sampled requests' lives: queued, prefill (admission to first token), decode; and
    for static batching the time a finished request's slot stayed held until the batch's slowest ended."""
    ids = gantt_sample(series)
    fig = make_subplots(
        rows=len(series), cols=1, shared_xaxes=True, vertical_spacing=0.06, subplot_titles=[er.label for er in series]
    )
    origin = None
    for er in series:
        rec = er.records.set_index(er.records["request_id"].astype(str))
        have = [i for i in ids if i in rec.index]
        if have:
            t = float(rec.loc[have, "t_scheduled"].min())
            origin = t if origin is None else min(origin, t)
    origin = origin or 0.0
    shown = set()
    for r, er in enumerate(series):
        rec = er.records.assign(_done=er.done)
        keyed = rec.set_index(rec["request_id"].astype(str))
        part = keyed.loc[[i for i in ids if i in keyed.index]]
        if part.empty:  # another schedule: take the same stretch of its own arrivals
            part = keyed.loc[gantt_sample([er], len(ids))]
        done = part["_done"]
        sched, adm = part["t_scheduled"], part["t_admitted"].fillna(done)
        first = part["t_first_token"].fillna(done)
        segments = [("queued", sched, adm), ("prefill", adm, first), ("decode", first, done)]
        if _static_like(er):
            batch_end = rec["_done"].groupby(rec["t_admitted"]).max()
            held_until = part["t_admitted"].map(batch_end).fillna(done)
            segments.append(("held", done, held_until))
        labels = [f"{i} · {tenant}" for i, tenant in zip(part.index, part["tenant"], strict=True)]
        for phase, a, b in segments:
            dur = (b - a).clip(lower=0).to_numpy(dtype=np.float64)
            fig.add_trace(
                go.Bar(
                    y=labels,
                    x=dur,
                    base=(a - origin).to_numpy(dtype=np.float64),
                    orientation="h",
                    name="slot held after finishing (static)" if phase == "held" else phase,
                    legendgroup=phase,
                    showlegend=phase not in shown,
                    marker={"color": PHASE_COLORS[phase], "line": {"width": 0}},
                    customdata=np.stack([part["prompt_tokens"], part["output_tokens"]], axis=-1),
                    hovertemplate=f"{er.label}<br>%{{y}}<br>{phase}: %{{base:.3f}} s + %{{x:.3f}} s<br>"
                    "prompt %{customdata[0]} tok, output %{customdata[1]} tok<extra></extra>",
                ),
                row=r + 1,
                col=1,
            )
            shown.add(phase)
        fig.update_yaxes(autorange="reversed", tickfont={"size": 9}, row=r + 1, col=1)
    fig.update_layout(barmode="overlay", bargap=0.25)
    fig.update_xaxes(title_text="seconds since the first sampled arrival", row=len(series), col=1)
    note = f"{len(ids)} consecutive requests by scheduled arrival, from a third into the steady window"
    return base_layout(fig, height=max(360, len(series) * (14 * len(ids) + 60) + 80)), note


SERVER_PANELS = (
    ("waiting", "requests queued (server)"),
    ("running", "requests running (server)"),
    ("kv_usage", "KV cache in use (server, share)"),
)


def _per_replica(label: str, frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "replica" not in frame:
        return [(label, frame)]
    named = frame["replica"].notna()
    return [
        (f"{label} {replica}", frame[named & frame["replica"].eq(replica)])
        for replica in dict.fromkeys(frame.loc[named, "replica"])
    ]


def server_view(series: list[EngineRun], colors: dict[str, str]) -> go.Figure | None:
    """The scraped server's queue, running requests and KV use on the request timeline's clock (HTTP targets
    with a scrape); None when no run has a server series. Failed scrapes are gaps, not zeros. A series scraped at
    a router's URL is left out: each sample is whichever replica answered (harness/metrics/server_series.py)."""
    scraped = [er for er in series if er.server is not None and len(er.server) and "router_replicas" not in er.server]
    if not scraped:
        return None
    fig = make_subplots(
        rows=3, cols=1, shared_xaxes=True, subplot_titles=[t for _, t in SERVER_PANELS], vertical_spacing=0.08
    )
    for er in scraped:
        # a fleet scraped replica by replica (rows naming their `replica`): one line per replica, dashed apart
        for n, (name, frame) in enumerate(_per_replica(er.label, er.server)):
            # a sample without `ok` is a failed one, as the summary counts it (harness.metrics.server_series)
            ok = frame["ok"].eq(True).to_numpy() if "ok" in frame else np.zeros(len(frame), dtype=bool)
            dash = ("solid", "dash", "dot", "dashdot")[n % 4]
            for r, (field, _) in enumerate(SERVER_PANELS):
                if field not in frame:
                    continue  # the server does not expose it
                y = frame[field].where(ok)
                fig.add_trace(
                    go.Scatter(
                        x=frame["t"],
                        y=y,
                        mode="lines",
                        name=name,
                        legendgroup=name,
                        showlegend=r == 0,
                        connectgaps=False,
                        line={"color": colors[er.label], "width": 1.6, "shape": "hv", "dash": dash},
                        hovertemplate=f"{name}<br>t=%{{x:.2f}} s<br>%{{y:.4g}}<extra></extra>",
                    ),
                    row=r + 1,
                    col=1,
                )
    fig.update_xaxes(title_text="seconds since the run started (the request timeline's clock)", row=3, col=1)
    return base_layout(fig, height=600)
