"""`write_report(run_dirs, out)`: the self-contained HTML report of one or more run directories."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from reports import figures_engine as fe
from reports import figures_latency as fl
from reports import simulated, tables
from reports.analysis import Analysis, analyse
from reports.compare import Comparison
from reports.downsample import DOWNSAMPLING
from reports.figures_compare import comparison_figure
from reports.figures_workload import workload_figure, workload_frame, workload_stats
from reports.fmt import esc
from reports.html import Section, page
from reports.load import EngineRun, RunData
from reports.prefix_cache import HOW, prefix_cache_html


def _version() -> str:
    try:
        return version("batchmark")
    except PackageNotFoundError:
        return "unknown"


def _latency_sections(series: list[EngineRun], colors: dict[str, str]) -> list[Section]:
    lat = Section(
        "latency",
        "Latency distributions",
        "CDFs of every successful request (ITL: every gap between two tokens of a request), log time axis; "
        "further right is slower, and the top of each curve is the tail. Then each percentile with its 95% "
        "bootstrap confidence interval as a whisker. TTFT and E2E are measured from the scheduled arrival "
        "(no coordinated omission).",
    )
    lat.figure(fl.latency_cdfs(series, colors))
    lat.figure(fl.percentile_bars(series, colors))
    slo_limits = ((series[0].summary.get("slo") or {}).get("slo")) or {}
    limits = ", ".join(f"{k.removesuffix('_s').upper()} ≤ {v} s" for k, v in slo_limits.items() if v is not None)
    slo = Section(
        "slo",
        "SLO attainment and goodput",
        f"Share of all requests (failures included) that meet the SLO ({limits or 'none set'}) as one limit "
        "moves and the others stay at the run's SLO, and as every limit is scaled by k together. Goodput "
        "is SLO-meeting requests per second: the metric table and the verdict give it for the run's "
        "SLO.",
    )
    slo.figure(fl.slo_curves(series, colors))
    if tables.class_rows(series):
        slo.table(tables.class_table(series), "Per SLO class (each against its own targets)")
    if tables.job_rows(series):
        slo.table(tables.job_table(series), "Jobs: whole sessions, first arrival to last token (--slo-job-s)")
    return [lat, slo]


def _engine_sections(series: list[EngineRun], colors: dict[str, str]) -> list[Section]:
    thr = Section(
        "throughput",
        "Throughput and queues over time",
        "Output tokens per second, requests waiting for admission, and requests inside the engine, counted "
        "from the records in equal time bins (shaded: the steady window the summary rates use).",
    )
    thr.figure(fe.throughput_over_time(series, colors))
    occ = Section(
        "occupancy",
        "Batch occupancy (from the step trace)",
        "How many batch slots computed a token, and how many were held by sequences that had already "
        "finished. Static batching fills a batch, then drains it down to its slowest member while finished "
        "members idle their slots; continuous batching refills a freed slot at the next step, so while "
        "requests wait its slots stay full.",
    )
    missing = "No step trace in these runs (e.g. an HTTP target): occupancy is unknown."
    occ.figure(fe.occupancy_overview(series, colors), fe.overview_note(series), missing)
    detail, note = fe.occupancy_detail(series, colors)
    occ.figure(detail, f"Detail: every engine step over {note}." if note else "")
    gantt, note = fe.gantt(series, colors)
    tl = Section(
        "timeline",
        "Request timeline",
        "The same requests in every engine: grey = queued (scheduled arrival to admission), amber = prefill "
        "(admission to first token), blue = decode (first token to finish), pink = a static batch member "
        "that finished but keeps its slot until the batch's slowest member is done. Under static batching "
        "new arrivals wait for the whole previous batch.",
    )
    tl.figure(gantt, f"Sample: {note}.")
    tl.figure(
        fe.server_view(series, colors),
        "The server's own view over the same clock, scraped from its metrics (--scrape): queue, running "
        "requests and KV-cache use; gaps are failed scrapes.",
        "",
    )
    return [thr, occ, tl]


def _comparison_section(comparisons: list[Comparison]) -> Section:
    sec = Section(
        "compare",
        "Comparisons",
        "Each engine against the baseline (static batching, or the first engine) and, across runs, each "
        "engine against itself in the first run. Runs that replayed the same schedule are compared request "
        "by request (Wilcoxon signed-rank test on the paired differences, median difference with a bootstrap "
        "CI); otherwise the two distributions are compared (Mann-Whitney U for a shift, Kolmogorov-Smirnov "
        "for any difference; scipy, two-sided). p-values are Holm-adjusted over the metrics of one "
        "comparison.",
    )
    if not comparisons:
        sec.html('<p class="note">One engine run only: nothing to compare.</p>')
        return sec
    sec.figure(comparison_figure(comparisons))
    for c in comparisons:
        sec.table(tables.comparison_table(c), f"{c.title}: {c.test_name}")
        sec.html(f'<p class="note">{esc(c.reason)}.</p>')
    return sec


def _run_sections(runs: list[RunData]) -> list[Section]:
    wl = Section("workload", "Workload", "The replayed requests: arrivals per tenant, prompt and output lengths.")
    lineage = Section(
        "lineage",
        "Lineage",
        "Each run's manifest: command, code, packages, model, workload, engine "
        "configurations, hardware, seeds, SLO and price.",
    )
    for run in runs:
        if len(runs) > 1:
            wl.html(f"<h3>{esc(run.label)}</h3>")
        if workload_frame(run).empty:
            wl.html('<p class="note">No per-request data (another tool\'s aggregates): no workload to show.</p>')
        else:
            wl.figure(workload_figure(run))
            wl.table(tables.kv_table(workload_stats(run)))
        summary = f"{esc(run.label)}: {esc(str(run.path))}"
        body = tables.dict_table(run.manifest) if run.manifest else "no manifest.json"
        lineage.html(f'<p class="note">{esc(run.label)}: {esc(where_it_ran(run.manifest))}</p>')
        lineage.html(f"<details{' open' if len(runs) == 1 else ''}><summary>{summary}</summary>{body}</details>")
    return [wl, lineage]


def where_it_ran(manifest: dict[str, Any]) -> str:
    """Which node ran which engine run: a cluster run's outcomes name theirs (docs/cluster.md)."""
    ran: dict[str, list[str]] = {}
    for o in manifest.get("outcomes") or []:
        if o.get("node"):
            ran.setdefault(o["node"], []).append(f"{o['engine']} t{o['trial']}")
    if ran:
        return "; ".join(f"node {node} ran {', '.join(runs)}" for node, runs in ran.items())
    kind = (manifest.get("executor") or {}).get("kind", "local")
    cpu = (manifest.get("hardware") or {}).get("cpu_model", "this machine")
    return f"every engine run on one machine ({kind} executor): {cpu}"


def _simulation_section(runs: list[RunData]) -> Section:
    sec = Section(
        "simulation",
        "Simulation",
        "Simulated engines ran batchmark's own schedulers in virtual time; "
        "each step took the time their cost model predicted (docs/simulator.md). Their parameters, then, "
        "for a run that also measured the real engine on the same schedule, how far the simulation "
        "landed from the measurement (error = simulated / measured - 1).",
    )
    for run in runs:
        for name, engine in simulated.simulated_engines(run.manifest).items():
            title = f"{run.label}/{name}" if len(runs) > 1 else name
            sec.html(f"<h3>{esc(title)}</h3><p>{esc(simulated.cost_model_text(engine))}</p>")
            sec.html(f"<details><summary>cost model</summary>{tables.dict_table(engine.get('cost_model'))}</details>")
    pairs = simulated.fidelity_tables(runs)
    for real, sim, rows in pairs:
        sec.html(f"<h3>Fidelity: {esc(sim)} against {esc(real)}</h3>{simulated.fidelity_html(real, sim, rows)}")
    if not pairs:
        sec.html(
            '<p class="note">No measured twin in these runs: the simulation\'s error here is not measured '
            "(see docs/simulator.md for measured fidelity).</p>"
        )
    return sec


def build_report(run_dirs: list[Path] | Analysis, *, labels: list[str] | None = None) -> str:
    """The report's HTML text (of run directories, or of an `Analysis` already made)."""
    started = time.perf_counter()
    a = run_dirs if isinstance(run_dirs, Analysis) else analyse(run_dirs, labels=labels)
    series, colors, v = a.series, a.colors, a.verdict
    head = Section(
        "summary",
        "Verdict",
        "Headline metrics with 95% intervals; a win counts only when the "
        "intervals do not overlap. Validity flags say when numbers should not be trusted as they "
        "stand.",
    )
    if a.banner:
        style = "border:2px solid #c60;padding:.5em"
        head.html(f'<p class="banner" style="{style}"><strong>⚠️ {esc(a.banner)}</strong></p>')
    head.table(tables.headline_table(v.headlines, a.labels))
    head.table(tables.flags_table(v.flags), "Run validity")
    metrics = Section(
        "metrics",
        "Metric table",
        "Every engine run side by side, from the run's metrics.json "
        "(definitions: docs/metrics.md). Grey brackets: 95% bootstrap confidence "
        "intervals.",
    )
    metrics.table(tables.metric_table(series))
    for label, line in tables.unseen_lines(series):
        metrics.html(f"<p>{esc(label)}: {esc(line)}</p>")
    repeat = tables.repeat_table(a.runs)
    if repeat:
        metrics.table(repeat, "Across trials")
    prefix = Section("prefix-cache", "Prefix cache and turns", HOW)
    prefix.table(prefix_cache_html(a.prefix_cache))
    tenants = Section(
        "tenants",
        "Tenants and fairness",
        "Per-tenant latency and the service each tenant received "
        "per second while it had work waiting (VTC weights: 1 per prompt token, 2 per output "
        "token).",
    )
    # Another tool's aggregates (an import without per-request data) have numbers for the tables, nothing to draw.
    drawn = [er for er in series if not er.records.empty]
    tenants.figure(fl.tenant_figure(drawn, colors))
    tenants.table(tables.fairness_table(drawn))
    tenants.table(tables.tenant_table(drawn), "Per tenant")
    warned = [(er.label, er.summary["warnings"]) for er in drawn if (er.summary.get("warnings") or {}).get("signals")]
    if warned:
        from reports.study import warnings_rows

        tenants.table(warnings_rows(warned), "Early warnings: first firing and lead before SLO violations began")
        tenants.html(
            '<p class="note">Signals and thresholds: docs/metrics.md; which fires first on each hard preset: '
            "docs/study.md. Lead = onset - firing; positive warned before harm.</p>"
        )
    cost = Section(
        "cost",
        "Cost",
        "Price per accelerator-hour times the engine run's wall time; on the CPU machine "
        "the price is only a way to turn time into a comparable unit.",
    )
    cost.table(tables.cost_table(series))
    about = Section("about", "About this report")
    about.html(f"<p>Downsampling: {esc(DOWNSAMPLING)}</p>")
    about.html(
        "<p>Statistical tests: paired comparisons use the Wilcoxon signed-rank test; unpaired ones the "
        "Mann-Whitney U and two-sample Kolmogorov-Smirnov tests (scipy.stats, two-sided), Holm-adjusted "
        "per comparison. Throughput and goodput intervals are batch means over 20 sub-windows of the steady "
        "window; SLO attainment uses a Wilson interval.</p>"
    )
    sources = {er.summary_source for er in series}
    about.html(f"<p>Summaries: {esc(', '.join(sorted(sources)))}. Figures show each engine's first trial.</p>")
    if len(drawn) < len(series):
        undrawn = ", ".join(er.label for er in series if er.records.empty)
        about.html(f"<p>Without records (another tool's aggregates only), not drawn: {esc(undrawn)}.</p>")
    notices = simulated.notices(a.runs)
    sections = [
        head,
        *([_simulation_section(a.runs)] if notices else []),
        metrics,
        *([prefix] if a.prefix_cache else []),
        *_latency_sections(drawn, colors),
        *_engine_sections(drawn, colors),
        tenants,
        cost,
        _comparison_section(a.comparisons),
        *_run_sections(a.runs),
        about,
    ]
    n_dirs = len(a.runs)
    subtitle = (
        f"{', '.join(a.labels)} · {n_dirs} run director{'y' if n_dirs == 1 else 'ies'} · "
        f"{sum(len(er.records) for er in series):,} requests shown"
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    footer = (
        f"batchmark {_version()} · generated {stamp} in {time.perf_counter() - started:.1f} s · "
        "self-contained: opens with no network"
    )
    return page(a.title, subtitle, v.lines, sections, footer, notices)


def write_report(run_dirs: list[Path] | Analysis, out: Path, *, labels: list[str] | None = None) -> Path:
    """Write the HTML report of `run_dirs` (one or more run directories) to `out`; returns `out`."""
    out = Path(out)
    text = build_report(run_dirs, labels=labels)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out
