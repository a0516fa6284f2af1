"""The report of a study directory (`batchmark study`): study.json in, one self-contained HTML page out.

Its "Failure mode" section is the trade-off the guide warns about, measured: throughput against p99 TTFT,
worst-tenant slowdown and Jain's index per arm with the Pareto front marked; which arm wins each metric,
with intervals over trials; per-tenant p99 TTFT; when each early warning first fired against when SLO
violations began; and what the recovery controls did. Reads study.json (metrics only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reports import tables
from reports.fmt import esc, number, seconds, share
from reports.html import Section, page
from reports.load import read_json
from reports.style import base_layout, series_colors

TRADE_OFFS = (
    ("ttft.p99", "p99 TTFT (s)"),
    ("worst_slowdown", "worst tenant p99 slowdown (x)"),
    ("jain", "Jain's index"),
)


def _value(metric: str, v: Any) -> str:
    if metric.split("[")[0].split(".")[0] in ("ttft", "tpot", "e2e", "queue_delay"):
        return seconds(v)
    return share(v) if metric in ("attainment", "failed") else number(v)


def tradeoff_figure(table: dict[str, Any], front: list[str], colors: dict[str, str], title: str) -> go.Figure:
    fig = make_subplots(rows=1, cols=len(TRADE_OFFS), subplot_titles=[t for _, t in TRADE_OFFS])
    for col, (metric, _) in enumerate(TRADE_OFFS, start=1):
        points = [(a, m["throughput"]["mean"], m[metric]["mean"]) for a, m in table.items()]
        points = [p for p in points if p[1] is not None and p[2] is not None]
        for arm, x, y in points:
            fig.add_trace(
                go.Scatter(
                    x=[x],
                    y=[y],
                    mode="markers+text",
                    text=[arm],
                    textposition="top center",
                    name=arm,
                    legendgroup=arm,
                    showlegend=col == 1,
                    marker={
                        "size": 13 if arm in front else 9,
                        "color": colors[arm],
                        "symbol": "star" if arm in front else "circle",
                    },
                ),
                row=1,
                col=col,
            )
        if metric == "ttft.p99":
            line = sorted((x, y) for arm, x, y in points if arm in front)
            if len(line) > 1:
                fig.add_trace(
                    go.Scatter(
                        x=[p[0] for p in line],
                        y=[p[1] for p in line],
                        mode="lines",
                        line={"dash": "dot", "color": "#616e7c"},
                        name="Pareto front",
                    ),
                    row=1,
                    col=col,
                )
        fig.update_xaxes(title_text="output tok/s", row=1, col=col)
        if metric != "jain":
            fig.update_yaxes(type="log", row=1, col=col)
    return base_layout(fig, height=420, title=title)


# The judge's three outcomes of "the best arm beats the baseline" (harness/study/verdict.py `wins`)
WIN_WORDS = {"holds": '<span class="ok">clear</span>', "cannot_tell": "cannot tell", "fails": "not better"}


COPIES = "identical trials: no run-to-run noise"  # instead of a zero-width [x, x] (harness.judge.tests)


def wins_table(rows: list[dict[str, Any]]) -> str:
    body = []
    for r in rows:
        low, high = r["change_ci"]
        interval = "" if low is None else f"[{low:+.1%}, {high:+.1%}]"
        change = "" if r["change"] is None else f"{r['change']:+.1%}"
        verdict = WIN_WORDS.get(r.get("outcome") or "", "-")
        if r.get("needs"):  # what would decide a claim the data cannot tell (the judge's sizing)
            verdict += f'<br><span class="ci">{esc(r["needs"])}</span>'
        if r.get("identical_trials"):  # a zero-width interval from copies, not certainty
            verdict += f'<br><span class="ci">{esc(COPIES)}</span>'
        body.append(
            [
                esc(r["metric"]),
                "higher" if r["higher_is_better"] else "lower",
                esc(r["best"]),
                _value(r["metric"], r["value"]),
                change,
                f'<span class="ci">{interval}</span>',
                verdict,
            ]
        )
    head = ("metric", "better", "best arm", "value", "vs baseline", "95% CI (trials)", "")
    return tables._table(head, body)


def class_table(panel: dict[str, dict[str, Any]]) -> str:
    """One slice's per-class panel: each class and arm, attainment and goodput with their 95% intervals (as
    harness/study/classes.py computed them; n/a with no data, never 0)."""

    def cell(c: dict[str, Any], share: bool) -> str:
        if c["mean"] is None:
            return "n/a"
        fmt = (lambda v: f"{v:.1%}") if share else (lambda v: f"{v:.3g} req/s")
        low, high = c["ci"]
        change = "" if c["change"] is None else f" ({c['change']:+.0%})"
        ci = "" if low is None or high is None else f"[{fmt(low)}, {fmt(high)}] {c['interval']}"
        return fmt(c["mean"]) + change + f'<br><span class="ci">{esc(ci)}</span>'

    rows = [
        [
            esc(cls),
            esc(arm),
            esc(", ".join("-" if n is None else str(n) for n in row["requests"])),
            cell(row["attainment"], True),
            cell(row["goodput_rps"], False),
        ]
        for cls, arms in panel.items()
        for arm, row in arms.items()
    ]
    return tables._table(("class", "arm", "requests (per trial)", "attainment", "goodput (steady)"), rows)


def arm_table(table: dict[str, Any], labels: list[str]) -> str:
    rows = []
    for arm, cells in table.items():
        row = [esc(arm)]
        for label in labels:
            c = cells[label]
            low, high = c["ci"]
            ci = "" if low is None else f'<br><span class="ci">[{_value(label, low)}, {_value(label, high)}]</span>'
            ci = f'<br><span class="ci">{esc(COPIES)}</span>' if c.get("identical") else ci
            change = "" if c["change"] is None or arm == "baseline" else f" ({c['change']:+.0%})"
            row.append(_value(label, c["mean"]) + change + ci)
        rows.append(row)
    return tables._table(["arm", *map(esc, labels)], rows)


def tenant_figure(units: list[dict[str, Any]], slice_name: str, colors: dict[str, str]) -> go.Figure | None:
    first = [u for u in units if u["slice"] == slice_name and u["trial"] == 0 and u.get("tenants")]
    if not first:
        return None
    fig = go.Figure()
    for u in first:
        tenants = sorted(u["tenants"])
        fig.add_trace(
            go.Bar(
                x=tenants,
                y=[u["tenants"][t]["ttft_p99_s"] for t in tenants],
                name=u["arm"],
                marker_color=colors[u["arm"]],
            )
        )
    fig.update_yaxes(type="log", title_text="p99 TTFT (s)")
    return base_layout(fig, height=360, title=f"Per-tenant p99 TTFT, {slice_name} slice, trial 0")


def warnings_figure(units: list[dict[str, Any]], slice_name: str, colors: dict[str, str]) -> go.Figure | None:
    first = [u for u in units if u["slice"] == slice_name and u["trial"] == 0 and u.get("warnings")]
    if not first:
        return None
    fig = go.Figure()
    for u in first:
        w = u["warnings"]
        names = [n for n, s in w["signals"].items() if s["first_fire_s"] is not None]
        fig.add_trace(
            go.Scatter(
                x=[w["signals"][n]["first_fire_s"] for n in names],
                y=names,
                mode="markers",
                name=u["arm"],
                marker={"size": 11, "color": colors[u["arm"]]},
            )
        )
        onset = w.get("slo_violation_onset_s")
        if onset is not None:
            fig.add_trace(
                go.Scatter(
                    x=[onset],
                    y=["SLO violations begin"],
                    mode="markers",
                    showlegend=False,
                    marker={"size": 13, "symbol": "x", "color": colors[u["arm"]]},
                )
            )
    fig.update_xaxes(title_text="seconds into the slice")
    return base_layout(fig, height=360, title=f"Early warnings: first firing and SLO-violation onset ({slice_name})")


def warnings_rows(labelled: list[tuple[str, dict[str, Any]]]) -> str:
    """One row per (label, metrics.json `warnings`): onset, earliest signal, each signal's first firing."""
    rows = []
    for label, w in labelled:
        cells = []
        for sig in w["signals"].values():
            if sig["first_fire_s"] is None:
                cells.append("–" if sig["measured"] else '<span class="muted">no data</span>')
            else:
                lead = "" if sig["lead_s"] is None else f" (lead {sig['lead_s']:+.1f} s)"
                cells.append(f"{sig['first_fire_s']:.1f} s{lead}")
        onset = w["slo_violation_onset_s"]
        rows.append([esc(label), "never" if onset is None else f"{onset:.1f} s", esc(w["earliest"] or "–"), *cells])
    names = next((list(w["signals"]) for _, w in labelled if w.get("signals")), [])
    return tables._table(["run", "SLO violations begin", "earliest", *names], rows)


def warnings_table(units: list[dict[str, Any]], slice_name: str) -> str:
    first = [u for u in units if u["slice"] == slice_name and u["trial"] == 0 and u.get("warnings")]
    return warnings_rows([(u["arm"], u["warnings"]) for u in first])


def recovery_table(units: list[dict[str, Any]], arms: list[dict[str, Any]]) -> str:
    controls = {a["name"]: a["spec"] for a in arms}
    rows = []
    for u in units:
        r = u.get("recovery") or {}
        if not any(r.get(k) for k in ("shed", "defer", "promote", "fallback")):
            continue
        fallback = "; ".join(
            f"t={f['t']:.1f} s: {f.get('why')} {f.get('value')} > {f.get('threshold')} for {f.get('held_s')} s -> "
            + ", ".join(f"{k} {v}" for k, v in f.items() if k in ("policy", "max_running", "was"))
            for f in r.get("fallback", [])
        )
        rows.append(
            [
                esc(u["arm"]),
                esc(u["slice"]),
                str(u["trial"]),
                number(r.get("shed", 0)),
                number(r.get("defer", 0)),
                number(r.get("promote", 0)),
                esc(fallback or "–"),
                f"<code>{esc(controls.get(u['arm'], ''))}</code>",
            ]
        )
    if not rows:
        return '<p class="note">No recovery control acted in any unit (all off, or never triggered).</p>'
    return tables._table(("arm", "slice", "trial", "shed", "deferred", "promoted (aging)", "fallback", "engine"), rows)


def build_study_report(study_dir: Path) -> str:
    data = read_json(Path(study_dir) / "study.json")
    plan, verdict, units = data["plan"], data.get("verdict") or {}, data["units"]
    arm_names = [a["name"] for a in data["arms"]]
    colors = series_colors(arm_names)
    head = Section(
        "verdict",
        "Verdict",
        "Picked on the tuning slice, confirmed (or not) on the held-out slice, "
        "as the plan written before the run says. The plan's SHA-256 is in the manifest.",
    )
    head.table(  # kv_table escapes: plain text in, so nothing shows as `&quot;` or `<code>`
        tables.kv_table(
            {
                "decision": plan["decision"],
                "plan": plan["path"],
                "sha256": plan.get("sha256") or data["plan_sha256"],
                "outcome": verdict.get("outcome", "incomplete").replace("_", " "),
                "workload": plan["workload"],
                "trials": str(plan["trials"]),
                "slices": ", ".join(f"{name} {a:g}-{b:g} s" for name, (a, b) in plan["slices"].items()),
            }
        )
    )
    flags = verdict.get("flags") or []
    if flags:
        head.html("".join(f'<p class="warn">flag: {esc(f)}</p>' for f in flags))
    labels = [m["metric"] for m in plan["metrics"]]
    extra = ["throughput", "ttft.p99", "tpot.p99", "worst_slowdown", "jain", "vtc_gap", "failed"]
    shown = list(dict.fromkeys([*labels, *extra]))
    failure = Section(
        "failure-mode",
        "Failure mode: utilisation against tail latency and fairness",
        "Each arm's throughput against its p99 TTFT, worst-tenant slowdown and Jain's index (means over "
        "trials; stars: the Pareto front of throughput and p99 TTFT). Then which arm wins each metric, with "
        "the 95% bootstrap interval over trials of its paired change against the baseline ('clear' when the "
        "judge finds the whole interval on the better side of no change, 'cannot tell' when it straddles it or "
        "one trial gives none), per-tenant p99 TTFT, when each early warning first fired against when SLO "
        "violations began (lead = onset - firing; positive warned before harm), and what the recovery "
        "controls did.",
    )
    for slice_name, table in (verdict.get("tables") or {}).items():
        front = (verdict.get("pareto") or {}).get(slice_name, [])
        failure.html(f"<h3>{esc(slice_name)} slice</h3>")
        failure.figure(tradeoff_figure(table, front, colors, f"Trade-off, {slice_name} slice"))
        failure.table(wins_table((verdict.get("wins") or {}).get(slice_name, [])), "Which arm wins")
        failure.table(arm_table(table, shown), "Every arm (mean, change vs baseline, 95% CI over trials)")
        failure.figure(tenant_figure(units, slice_name, colors))
        failure.figure(warnings_figure(units, slice_name, colors))
        failure.table(warnings_table(units, slice_name), "Early warnings (trial 0)")
    failure.table(recovery_table(units, data["arms"]), "Recovery actions")
    sections = [head, failure]
    if verdict.get("classes"):
        classes = Section(
            "classes",
            "SLO classes",
            "Each class's attainment and steady goodput against its own targets (the plan's slo_classes), per arm: "
            "the mean over trials with the 95% bootstrap interval over trials, or with one trial that run's own "
            "interval (Wilson for attainment, exact Poisson for goodput); change vs the baseline in brackets.",
        )
        for slice_name, panel in verdict["classes"].items():
            classes.table(class_table(panel), f"{slice_name} slice")
        sections.append(classes)
    arms = Section("arms", "Arms", "The baseline and each variant: the one assumption it changes, and its engine.")
    arms.table(
        tables._table(
            ("arm", "change", "engine", "load", "tenants"),
            [
                [
                    esc(a["name"]),
                    esc(a["change"] or "-"),
                    f"<code>{esc(a['spec'])}</code>",
                    f"{a['load']:g}x",
                    esc(a["tenants"] or "all"),
                ]
                for a in data["arms"]
            ],
        )
    )
    runs = Section("units", "Units", "One run directory per arm, slice and trial, each a full `batchmark run`.")
    runs.table(
        tables._table(
            ("arm", "slice", "trial", "requests", "run directory"),
            [
                [
                    esc(u["arm"]),
                    esc(u["slice"]),
                    str(u["trial"]),
                    number(u["requests"]),
                    f"<code>{esc(u['run_dir'])}</code>",
                ]
                for u in units
            ],
        )
    )
    lines = [*(verdict.get("lines") or ["the study has not finished"]), *(f"flag: {f}" for f in flags)]
    return page(
        f"batchmark study: {plan['decision']}",
        f"{len(arm_names)} arms · {len(units)} runs",
        lines,
        [*sections, arms, runs],
        "batchmark study report · self-contained: opens with no network",
    )


def write_study_report(study_dir: Path) -> Path:
    out = Path(study_dir) / "study.html"
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(build_study_report(study_dir), encoding="utf-8")
    tmp.replace(out)
    return out
