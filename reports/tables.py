"""HTML tables: the metric table, per-tenant table, cost table, comparisons, verdict and the manifest.

Every table puts engines side by side (one column per engine run) unless a row per engine reads better.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from typing import Any

from harness.judge.headline import Headline
from harness.judge.tests import identical_trials
from harness.metrics.jobs import describe_jobs
from harness.metrics.latency import describe_unseen
from harness.metrics.slo_classes import describe_class
from reports import fmt
from reports.compare import METRIC_NAMES, Comparison
from reports.load import EngineRun, RunData
from reports.verdict import formatter, interval, point

LATENCY_ROWS = (
    ("ttft", "TTFT"),
    ("ttft_sent", "TTFT from send"),
    ("tpot", "TPOT"),
    ("itl", "ITL"),
    ("e2e", "E2E"),
    ("queue_delay", "queueing delay"),
    ("normalized_latency", "normalized latency (s/token)"),
    ("slowdown", "slowdown (x)"),
)


def _table(head: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    h = "".join(f"<th>{c}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def unseen_lines(series: list[EngineRun]) -> list[tuple[str, str]]:
    """(engine run, line) where queueing could not be measured (an HTTP target), as summary.md and the report
    say it under their tables; the console says the same from metrics.json (harness/console.py)."""
    return [(er.label, line) for er in series if (line := describe_unseen(er.summary))]


def _unseen(summary: dict[str, Any], metric: str) -> str:
    """ "n/a" with its reason as a title where the engine could not measure `metric` (an HTTP target's queueing
    delay and slowdown: summary latency entries with `measured` false); "" where it could."""
    block = _get(summary, "latency", metric) or {}
    return fmt.rate(None, block.get("reason"), html_title=True) if block.get("measured") is False else ""


def _percentile(metric: dict[str, Any] | None, label: str, f: Callable[[Any], str]) -> str:
    """A latency percentile with its interval, or without one, saying so, when the sample cannot resolve it."""
    p = _get(metric, "percentiles", label)
    thin = fmt.unresolved(_get(metric, "count"), label)
    if thin and p and not p.get("lower_bound"):
        return f'{f(p.get("value"))} <span class="ci">({fmt.esc(thin)})</span>'
    return _with_ci(p, f)


def _with_ci(p: dict[str, Any] | None, f: Callable[[Any], str]) -> str:
    if not p:
        return "–"
    if p.get("lower_bound"):  # requests cut off while waiting reach this percentile: its true value is higher
        interval = "" if fmt.missing(p.get("ci_low")) else f"[{f(p.get('ci_low'))}, unknown]"
        return f"≥ {f(p.get('value'))}" + (f' <span class="ci">{interval}</span>' if interval else "")
    interval = fmt.ci(p.get("ci_low"), p.get("ci_high"), f)
    return f"{f(p.get('value'))}" + (f' <span class="ci">{interval}</span>' if interval else "")


def _reason(summary: dict[str, Any], window: str, rate: str) -> str | None:
    """Why a window's rate is undefined (runs written before per-rate reasons give one for all)."""
    w = _get(summary, "throughput", window) or {}
    return (w.get("reasons") or {}).get(rate) if "reasons" in w else w.get("reason")


def metric_table(series: list[EngineRun]) -> str:
    """Headline numbers of every engine run side by side; percentiles with their 95% bootstrap CI."""
    rows: list[list[str]] = []

    def add(name: str, getter: Callable[[dict[str, Any]], str]) -> None:
        rows.append([name, *(getter(er.summary) for er in series)])

    add(
        "requests (succeeded / failed)",
        lambda s: f"{_get(s, 'requests', 'succeeded'):,} / {_get(s, 'requests', 'failed'):,}",
    )
    add("output tokens", lambda s: fmt.number(_get(s, "requests", "output_tokens")))
    for key, name in LATENCY_ROWS:
        f = fmt.number if key == "slowdown" else fmt.seconds
        for label in ("p50", "p90", "p99", "p99.9"):
            if key in ("ttft_sent", "slowdown", "normalized_latency", "queue_delay") and label in ("p90", "p99.9"):
                continue
            add(
                f"{name} {label}",
                lambda s, k=key, lb=label, f=f: _unseen(s, k) or _percentile(_get(s, "latency", k), lb, f),
            )
        add(f"{name} mean", lambda s, k=key, f=f: _unseen(s, k) or f(_get(s, "latency", k, "mean")))
    add("offered rate (req/s, from the schedule)", lambda s: fmt.number(_get(s, "load", "offered_rate_rps")))
    add("send rate (req/s, achieved)", lambda s: fmt.number(_get(s, "load", "send_rate_rps")))
    add("mean in flight (requests, Little's law)", lambda s: fmt.number(_get(s, "load", "mean_in_flight")))
    add("schedule lag p99", lambda s: _with_ci(_get(s, "schedule_lag", "percentiles", "p99"), fmt.seconds))
    for window in ("steady", "whole_run"):
        w = window.replace("_", " ")
        for key, name in (
            ("request_rate", "requests/s"),
            ("output_token_rate", "output tok/s"),
            ("total_token_rate", "total tok/s"),
        ):
            add(
                f"{name} ({w})",
                lambda s, w=window, k=key: fmt.rate(_get(s, "throughput", w, k), _reason(s, w, k), html_title=True),
            )
    add("SLO attainment", lambda s: fmt.share(_get(s, "slo", "attainment")))
    add(
        "goodput req/s (steady)",
        lambda s: fmt.rate(
            _get(s, "slo", "goodput_rps_steady"), _get(s, "slo", "goodput_rps_steady_reason"), html_title=True
        ),
    )
    kinds = ("failed", "ttft", "tpot", "e2e")
    add(
        "SLO violations (failed / TTFT / TPOT / E2E)",
        lambda s: " / ".join(str(_get(s, "slo", "violations", k)) for k in kinds),
    )
    add("slots computing (busy time)", lambda s: fmt.share(_get(s, "utilisation", "mean_running_share")))
    add("slots held idle (busy time)", lambda s: fmt.share(_get(s, "utilisation", "idle_slot_share")))
    add("padded token share", lambda s: fmt.share(_get(s, "utilisation", "padded_token_share")))
    add("engine idle time", lambda s: fmt.share(_get(s, "utilisation", "idle_time_share")))
    add("preemptions", lambda s: fmt.number(_get(s, "requests", "preemptions")))
    add("Jain's index (tenant service rate)", lambda s: fmt.number(_get(s, "fairness", "jain_index"), 3))
    add("$ per 1M output tokens", lambda s: fmt.usd(_get(s, "cost", "usd_per_1m_output_tokens")))
    add(
        "prompt tokens off by > 1 (share of counted)",
        lambda s: fmt.share(_get(s, "validity", "prompt_tokens", "share_off")),
    )
    add("validity flags", lambda s: ", ".join(f["name"] for f in (_get(s, "validity", "flags") or [])) or "none")
    return _table(["metric", *(fmt.esc(er.label) for er in series)], rows, "metric-table")


def headline_table(heads: list[Headline], labels: list[str]) -> str:
    rows = []
    for h in heads:
        cells = []
        for label in labels:
            e = h.estimates.get(label)
            if e is None or fmt.missing(e.value):
                cells.append(fmt.rate(None, e.reason, html_title=True) if e is not None and e.reason else "–")
                continue
            ci = interval(e, formatter(h))
            mark = " win" if h.winner == label and h.clear else (" lead" if h.winner == label else "")
            cell = point(e, formatter(h)) + (f' <span class="ci">{ci}</span>' if ci else "")
            cells.append(f'<span class="val{mark}">{cell}</span>')
        if h.winner is None:
            who = "–"
        elif h.point_only:
            who = f"{fmt.esc(h.winner)} <span class='muted'>({h.margin + ', ' if h.margin else ''}no interval)</span>"
        elif h.clear:
            who = f"<b>{fmt.esc(h.winner)}</b>" + (f" ({h.margin})" if h.margin else "")
        else:
            who = f'<span class="muted">too close to call ({fmt.esc(h.winner)} ahead, CIs overlap)</span>'
        rows.append([f"{h.name} <span class='muted'>({h.better} is better)</span>", *cells, who])
    return _table(["headline", *(fmt.esc(x) for x in labels), "winner"], rows, "headline-table")


def flags_table(flags: list[dict[str, str]]) -> str:
    if not flags:
        return '<p class="ok">Every validity check passed for every engine run.</p>'
    rows = [[fmt.esc(f["series"]), f"<code>{fmt.esc(f['name'])}</code>", fmt.esc(f["message"])] for f in flags]
    return _table(["engine run", "flag", "what it means"], rows, "flags-table")


def class_rows(series: list[EngineRun]) -> list[list[str]]:
    """Per engine run and SLO class (`--slo-class`): one line each, as the console prints it (plain text)."""
    return [
        [er.label, describe_class(name, row)]
        for er in series
        for name, row in (er.summary.get("slo_classes") or {}).items()
    ]


JOBS_HEAD = "jobs: completion time p50/p90/p99 [95% CI], job SLO attainment [95% Wilson] (docs/metrics.md#jobs)"


def job_rows(series: list[EngineRun]) -> list[list[str]]:
    """Per engine run with sessions: its jobs line (plain text), as the console prints it."""
    return [[er.label, describe_jobs(er.summary["jobs"])] for er in series if er.summary.get("jobs")]


def job_table(series: list[EngineRun]) -> str:
    rows = [[fmt.esc(label), fmt.esc(line)] for label, line in job_rows(series)]
    return _table(["engine run", JOBS_HEAD], rows) if rows else ""


def class_table(series: list[EngineRun]) -> str:
    rows = [[fmt.esc(label), fmt.esc(line)] for label, line in class_rows(series)]
    return _table(["engine run", "class: targets, attainment [95% Wilson], goodput [95% Poisson], binding limit"], rows)


def tenant_table(series: list[EngineRun]) -> str:
    rows = []
    for er in series:
        for tenant, t in sorted((er.summary.get("tenants") or {}).items()):
            rows.append(
                [
                    fmt.esc(er.label),
                    fmt.esc(tenant),
                    fmt.number(t.get("requests")),
                    fmt.share(t.get("attainment")),
                    fmt.seconds(t.get("ttft_p50")),
                    fmt.seconds(t.get("ttft_p99")),
                    fmt.seconds(t.get("e2e_p99")),
                    _unseen(er.summary, "slowdown") or fmt.number(t.get("slowdown_p99"), 3),
                    _unseen(er.summary, "queue_delay") or fmt.seconds(t.get("max_queue_delay")),
                    fmt.number(t.get("service_rate")),
                ]
            )
    head = [
        "engine run",
        "tenant",
        "requests",
        "SLO attainment",
        "TTFT p50",
        "TTFT p99",
        "E2E p99",
        "slowdown p99",
        "max queueing delay",
        "service rate (units/s backlogged)",
    ]
    return _table(head, rows, "tenant-table")


def fairness_table(series: list[EngineRun]) -> str:
    rows: list[list[str]] = []
    for name, getter in (
        ("Jain's index over tenant service rates (1 = equal)", lambda f: fmt.number(f.get("jain_index"), 3)),
        ("p99 slowdown, worst / best tenant", lambda f: fmt.number(f.get("p99_slowdown_max_min_ratio"), 3)),
        ("VTC service gap (units)", lambda f: fmt.number(_get(f, "vtc_gap", "gap"))),
        ("VTC gap between", lambda f: fmt.esc(" & ".join(_get(f, "vtc_gap", "tenants") or []) or "–")),
        (
            "longest queueing delay",
            lambda f: (
                fmt.rate(None, _get(f, "starvation", "reason"), html_title=True)
                if _get(f, "starvation", "measured") is False
                else fmt.seconds(_get(f, "starvation", "max_queue_delay_s"))
                + (f" ({fmt.esc(_get(f, 'starvation', 'request_id'))})" if _get(f, "starvation", "request_id") else "")
            ),
        ),
        (
            "requests never admitted",
            lambda f: fmt.rate(
                _get(f, "starvation", "never_admitted"), _get(f, "starvation", "reason"), html_title=True
            ),
        ),
    ):
        rows.append([name, *(getter(er.summary.get("fairness") or {}) for er in series)])
    return _table(["fairness", *(fmt.esc(er.label) for er in series)], rows, "fairness-table")


def cost_table(series: list[EngineRun]) -> str:
    rows = []
    for er in series:
        c = er.summary.get("cost") or {}
        rows.append(
            [
                fmt.esc(er.label),
                fmt.usd(c.get("price_per_hour")),
                fmt.number(c.get("accelerators")),
                f"{fmt.number(c.get('wall_time_s'))} s ({fmt.esc(c.get('wall_time_source', '?'))})",
                fmt.usd(c.get("total_usd")),
                fmt.usd(c.get("usd_per_1m_output_tokens")),
                fmt.usd(c.get("usd_per_1k_good_requests")),
            ]
        )
    head = [
        "engine run",
        "price / accelerator-hour",
        "accelerators",
        "wall time (source)",
        "total",
        "per 1M output tokens",
        "per 1,000 SLO-meeting requests",
    ]
    return _table(head, rows, "cost-table")


def comparison_table(c: Comparison) -> str:
    rows = []
    for metric, r in c.table.iterrows():
        ks = [f"D = {fmt.number(r['ks_statistic'], 3)}, p = {fmt.pvalue(r['ks_p_value'])}"]
        ks = ks if c.kind == "unpaired" else []
        results = {"b lower": f"{fmt.esc(c.b.label)} lower", "b higher": f"{fmt.esc(c.b.label)} higher"}
        interval = fmt.ci(r["ci_low"], r["ci_high"])
        rows.append(
            [
                METRIC_NAMES.get(str(metric), str(metric)),
                f"{r['n_a']:,} / {r['n_b']:,}",
                fmt.seconds(r["median_a"]),
                fmt.seconds(r["median_b"]),
                f"{fmt.seconds(r['delta'])} <span class='ci'>{interval}</span>",
                fmt.share(r["rel_change"]),
                fmt.share(r["effect"]),
                fmt.pvalue(r["p_value"]),
                fmt.pvalue(r["p_holm"]),
                *ks,
                results.get(r["verdict"], "no significant difference"),
            ]
        )
    delta = f"{c.quantity} [95% CI]"
    effect = "requests where b is lower" if c.kind == "paired" else "P(b < a)"
    test = "Wilcoxon p" if c.kind == "paired" else "Mann-Whitney U p"
    ks_head = ["Kolmogorov-Smirnov"] if c.kind == "unpaired" else []
    head = [
        "metric",
        "n (a / b)",
        f"median a ({fmt.esc(c.a.label)})",
        f"median b ({fmt.esc(c.b.label)})",
        delta,
        "relative change",
        effect,
        test,
        "Holm-adjusted p",
        *ks_head,
        "result (α = 0.05)",
    ]
    return _table(head, rows, "compare-table")


def repeat_table(runs: list[RunData]) -> str:
    """metrics.json's across-trial statistics, when the run repeated its engines."""
    rows = []
    for run in runs:
        for engine, metrics in sorted(((run.metrics or {}).get("repeat") or {}).items()):
            for metric, s in sorted((metrics or {}).items()):
                if isinstance(s, dict):
                    rows.append(
                        [
                            fmt.esc(run.label),
                            fmt.esc(engine),
                            fmt.esc(metric),
                            fmt.number(s.get("mean")),
                            # a zero-width CI from copies is not certainty (harness.judge.tests)
                            "identical trials: no run-to-run noise"
                            if identical_trials(s.get("values") or [])
                            else fmt.ci(s.get("ci_low"), s.get("ci_high"), fmt.number),
                            fmt.esc(", ".join(fmt.number(v) for v in s.get("values") or [])),
                        ]
                    )
    if not rows:
        return ""
    return _table(["run", "engine", "metric", "mean over trials", "95% CI", "trials"], rows, "repeat-table")


def dict_table(d: Any, depth: int = 0, key: str = "") -> str:
    """A nested dict or list as nested tables; long lists are cut with a count, a command line is joined."""
    if isinstance(d, dict):
        if not d:
            return "<span class='muted'>{}</span>"
        rows = "".join(
            f"<tr><th>{fmt.esc(k)}</th><td>{dict_table(v, depth + 1, str(k))}</td></tr>" for k, v in d.items()
        )
        return f'<table class="kv">{rows}</table>'
    if isinstance(d, list) and key in ("command", "argv", "cmd") and all(isinstance(v, str) for v in d):
        return f"<code>{fmt.esc(shlex.join(d))}</code>"
    if isinstance(d, list):
        if all(not isinstance(v, dict | list) for v in d):
            shown = ", ".join(fmt.esc(v) for v in d[:50])
            return shown + (f" … ({len(d)} items)" if len(d) > 50 else "")
        items = "".join(f"<li>{dict_table(v, depth + 1)}</li>" for v in d[:20])
        return f"<ol>{items}</ol>" + (f"<span class='muted'>… {len(d)} items</span>" if len(d) > 20 else "")
    if d is None:
        return "<span class='muted'>null</span>"
    text = str(d)
    return f"<code>{fmt.esc(text)}</code>" if len(text) > 40 and " " not in text else fmt.esc(text)


def kv_table(pairs: dict[str, str]) -> str:
    return (
        '<table class="kv">'
        + "".join(f"<tr><th>{fmt.esc(k)}</th><td>{fmt.esc(v)}</td></tr>" for k, v in pairs.items())
        + "</table>"
    )
