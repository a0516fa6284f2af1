"""The Markdown summary of one or more runs, for summary.md and CI step summaries ($GITHUB_STEP_SUMMARY).

Short by design: the verdict, the headline table with 95% intervals, validity flags and the per-request
comparisons; the full metric table folds away in a <details> block. No HTML beyond <details>.
"""

from __future__ import annotations

from pathlib import Path

from reports import fmt, simulated, tables
from reports.analysis import Analysis, analyse
from reports.compare import METRIC_NAMES
from reports.prefix_cache import HIT_HEAD, prefix_cache_text
from reports.tables import JOBS_HEAD, job_rows
from reports.verdict import cell, formatter


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(head), "|" + "|".join("---" for _ in head) + "|", *(_row(r) for r in rows)]


def _headlines(a: Analysis) -> list[str]:
    rows = []
    for h in a.verdict.headlines:
        cells = [f"{h.name} ({h.better} is better)"]
        for label in a.labels:
            e = h.estimates.get(label)
            if e is None or fmt.missing(e.value):
                cells.append("n/a" if e is not None and e.reason else "–")
                continue
            text = cell(e, formatter(h))
            cells.append(f"**{text}**" if h.winner == label and h.clear else text)
        if h.winner is None:
            cells.append("–")
        elif h.point_only:
            cells.append(f"{h.winner} {h.margin} (no interval)".replace("  ", " "))
        else:
            cells.append(f"{h.winner} {h.margin}".strip() if h.clear else "too close to call")
        rows.append(cells)
    return _table(["headline", *a.labels, "winner"], rows)


def _metric_rows(a: Analysis) -> list[str]:
    def pct(s: dict, metric: str, label: str) -> str:
        block = (s.get("latency") or {}).get(metric) or s.get(metric) or {}  # `reasoning` holds ttfo at its top
        p = (block.get("percentiles") or {}).get(label) or {}
        thin = fmt.unresolved(block.get("count"), label)
        return fmt.seconds(p.get("value")) + (f" ({thin})" if thin else "")

    rows: list[list[str]] = []
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "E2E")):
        for label in ("p50", "p90", "p99", "p99.9"):
            rows.append([f"{name} {label}", *(pct(er.summary, metric, label) for er in a.series)])
    thinking = [er.summary.get("reasoning") for er in a.series]
    if any(thinking):  # a reasoning workload: the answer's first token beside TTFT, and requests with no answer
        for label in ("p50", "p99"):
            rows.append([f"TTFO {label}", *(pct(r or {}, "ttfo", label) for r in thinking)])
        rows.append(["spent max_tokens reasoning", *(fmt.number((r or {}).get("exhausted")) for r in thinking)])
    for key, name in (("request_rate", "requests/s (steady)"), ("output_token_rate", "output tok/s (steady)")):
        steady = [((er.summary.get("throughput") or {}).get("steady") or {}) for er in a.series]
        rows.append([name, *(fmt.rate(w.get(key), (w.get("reasons") or {}).get(key, w.get("reason"))) for w in steady)])
    rows.append(["SLO attainment", *(fmt.share((er.summary.get("slo") or {}).get("attainment")) for er in a.series)])
    rows.append(
        [
            "slots computing",
            *(fmt.share((er.summary.get("utilisation") or {}).get("mean_running_share")) for er in a.series),
        ]
    )
    rows.append(["requests failed", *(fmt.number((er.summary.get("requests") or {}).get("failed")) for er in a.series)])
    return _table(["metric", *a.labels], rows)


def _prefix_cache(a: Analysis) -> list[str]:
    """The console's prefix-cache and TTFT-by-turn lines, as two tables (none: nothing to say)."""
    if not a.prefix_cache:
        return []
    hits, turn_head, turn_rows = prefix_cache_text(a.prefix_cache)
    lines = ["### Prefix cache and turns", "", *_table(list(HIT_HEAD), hits), ""]
    if turn_rows:
        lines += ["TTFT by turn (p50; p99 and counts after it):", "", *_table(turn_head, turn_rows), ""]
    return lines


def markdown_summary(run_dir: Path | list[Path] | Analysis, *, labels: list[str] | None = None) -> str:
    """Markdown summary of a run directory (or several, or an `Analysis` already made)."""
    a = run_dir if isinstance(run_dir, Analysis) else analyse(run_dir, labels=labels)
    lines = [f"## {a.title.removeprefix('batchmark report: ')}: {', '.join(a.labels)}", ""]
    lines += [f"> ⚠️ **{a.banner}**", ""] if a.banner else []
    lead, *rest = a.verdict.lines or [""]
    lines += [f"**{lead}**", "", *(f"- {line}" for line in rest), ""]
    notices = simulated.notices(a.runs)
    lines += [*(f"> **{n}**" for n in notices), *([""] if notices else [])]
    for real, sim, rows in simulated.fidelity_tables(a.runs):
        cells = [
            [
                r["metric"],
                fmt.seconds(r["real"]) if r["unit"] == "s" else fmt.number(r["real"]),
                fmt.seconds(r["simulated"]) if r["unit"] == "s" else fmt.number(r["simulated"]),
                "–" if r["error"] is None else f"{r['error']:+.1%}",
            ]
            for r in rows
        ]
        lines += [f"Fidelity of {sim} against the measured {real}:", ""]
        lines += [*_table(["metric", f"{real} (measured)", f"{sim} (simulated)", "error"], cells), ""]
    lines += [*_headlines(a), ""]
    unseen = tables.unseen_lines(a.series)
    lines += [*(f"- `{label}` {line}" for label, line in unseen), *([""] if unseen else [])]
    classes = tables.class_rows(a.series)
    if classes:
        lines += ["**Per SLO class**", "", *(f"- `{label}` {line}" for label, line in classes), ""]
    lines.append(
        "Intervals are 95%: bootstrap for percentiles, batch means for throughput and goodput, Wilson for "
        "attainment; a win needs non-overlapping intervals."
    )
    lines.append("")
    if a.verdict.flags:
        lines.append("**Validity flags**")
        lines.append("")
        lines += [f"- `{f['series']}` **{f['name']}**: {f['message']}" for f in a.verdict.flags]
    else:
        lines.append("Validity: every check passed.")
    lines.append("")
    for c in a.comparisons:
        lines.append(f"### {c.title}: {c.test_name}")
        lines.append("")
        rows = []
        for metric, r in c.table.iterrows():
            results = {"b lower": f"{c.b.label} lower", "b higher": f"{c.b.label} higher"}
            rows.append(
                [
                    METRIC_NAMES.get(str(metric), str(metric)),
                    fmt.seconds(r["median_a"]),
                    fmt.seconds(r["median_b"]),
                    f"{fmt.seconds(r['delta'])} {fmt.ci(r['ci_low'], r['ci_high'])}",
                    fmt.pvalue(r["p_holm"]),
                    results.get(r["verdict"], "no difference"),
                ]
            )
        delta = c.quantity
        lines += _table(
            [
                "metric",
                f"median {c.a.label}",
                f"median {c.b.label}",
                f"{delta} [95% CI]",
                "p (Holm)",
                "result (α = 0.05)",
            ],
            rows,
        )
        lines += ["", f"_{c.reason}._", ""]
    lines += _prefix_cache(a)
    jobs = job_rows(a.series)
    lines += ["### Jobs (whole sessions)", "", *_table(["engine run", JOBS_HEAD], jobs), ""] if jobs else []
    lines += ["<details><summary>Metric table</summary>", "", *_metric_rows(a), "", "</details>", ""]
    return "\n".join(lines)
