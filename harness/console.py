"""The console summary printed at the end of a run: engines side by side, then the flags."""

from __future__ import annotations

from typing import Any

from harness.judge.comparison import QUANTITY
from harness.judge.tests import identical_trials
from harness.metrics import summary_table
from harness.metrics.jobs import describe_jobs
from harness.metrics.latency import describe_unseen
from harness.metrics.prefix_cache import prefix_cache_views
from harness.metrics.replicas import describe_replicas
from harness.metrics.serving_path import describe_serving_path
from harness.metrics.slo_classes import describe_class
from harness.metrics.spec_decode import describe_spec_decode
from harness.metrics.stops import describe_stop
from harness.partial_failures import partial_failure_lines

COLUMNS = {
    "engine": "engine",
    "requests": "reqs",
    "failed": "failed",
    "offered_rps": "offered r/s",
    "sent_rps": "sent r/s",
    "ttft_p50_s": "TTFT p50",
    "ttft_p99_s": "TTFT p99",
    "tpot_p50_s": "TPOT p50",
    "tpot_p99_s": "TPOT p99",
    "e2e_p99_s": "E2E p99",
    "out_tok_per_s": "out tok/s",
    "slo_attainment": "SLO met",
    "goodput_rps": "goodput r/s",
    "slot_use": "slot use",
}
SECONDS = {"ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p99_s"}
SHARES = {"slo_attainment", "slot_use"}
LOADS = {"offered_rps", "sent_rps"}  # side by side: the load asked for and the load the dispatcher managed
RATES = {"out_tok_per_s": "rate_reason", "goodput_rps": "goodput_reason"}  # rate column -> its reason column


def _missing(value: Any) -> bool:
    return value is None or value != value


def _cell(column: str, value: Any, at_least: bool = False) -> str:
    if _missing(value):
        return "n/a" if column in RATES else "-"
    if column in SECONDS:
        return ("≥ " if at_least else "") + (f"{value * 1e3:.0f} ms" if value < 10 else f"{value:.1f} s")
    if column in SHARES:
        return f"{value:.0%}"
    if column in LOADS:
        return f"{value:.2f}"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _thin_tail_lines(metrics: dict[str, Any]) -> list[str]:
    """The p99 columns of a run too small to resolve them (the judge's bound): said, not shown as resolved."""
    from harness.judge.verdict import tail_is_resolved, values_to_resolve

    out = []
    for engine, summary in metrics["engines"].items():
        counts = {m: ((summary.get("latency") or {}).get(m) or {}).get("count") for m in ("ttft", "tpot", "e2e")}
        thin = {m: n for m, n in counts.items() if n and not tail_is_resolved(int(n), 0.99)}
        if thin:
            said = ", ".join(f"{m.upper()} of {n}" for m, n in thin.items())
            out.append(
                f"! {engine}: p99 here is about the largest value ({said} requests), not a resolved "
                f"percentile: p99 needs {values_to_resolve(0.99)} requests"
            )
    return out


def format_summary(metrics: dict[str, Any]) -> str:
    table = summary_table(metrics["engines"]).reset_index()
    rows = [
        [_cell(c, row.get(c), bool(row.get(f"{c}_at_least"))) for c in COLUMNS]
        for row in table.to_dict(orient="records")
    ]
    header = list(COLUMNS.values())
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    for row in table.to_dict(orient="records"):
        reasons = {
            row[reason]
            for column, reason in RATES.items()
            if _missing(row.get(column)) and not _missing(row.get(reason))
        }
        for reason in sorted(reasons):
            lines.append(f"! {row['engine']}: steady-window rates n/a: {reason}")
        if row.get("ttft_censored"):
            lines.append(
                f"! {row['engine']}: {row['ttft_censored']} requests were cut off before their first token; they "
                "count at their wait so far, so a TTFT marked ≥ is a lower bound"
            )
    lines += _thin_tail_lines(metrics)
    for run in metrics["runs"]:
        for name, row in ((run.get("summary") or {}).get("slo_classes") or {}).items():
            lines.append(f"  {run['engine']} trial {run['trial']}: {describe_class(name, row)}")
    for run in metrics["runs"]:
        machine = run.get("machine") or {}
        if machine.get("busy"):
            lines.append(f"! {run['engine']} trial {run['trial']} {machine['message']}")
        if run.get("over_saturation_unjudged"):
            lines.append(
                f"! {run['engine']} trial {run['trial']}: --stop-over-saturated never judged the run: "
                f"{run['over_saturation_unjudged']}"
            )
        if run.get("stopped_early"):
            s = run["stopped_early"]
            if s["rule"] == "engine_failure":
                lines.append(
                    f"! {run['engine']} trial {run['trial']}: the engine failed ({s.get('message')}); "
                    f"{s['not_sent']} requests not sent"
                )
                continue
            lines.append(
                f"! {run['engine']} trial {run['trial']} stopped early: {describe_stop(s)}, "
                f"{s['not_sent']} requests not sent"
            )
    lines += partial_failure_lines(metrics)
    lines += _worker_lines(metrics["runs"])
    nodes: dict[str, list[str]] = {}
    for run in metrics["runs"]:
        if run.get("node"):
            nodes.setdefault(run["node"], []).append(f"{run['engine']} t{run['trial']}")
    for node, ran in nodes.items():
        lines.append(f"node {node} ran {', '.join(ran)}")
    for engine, summary in metrics["engines"].items():
        for flag in summary["validity"]["flags"]:
            lines.append(f"! {engine}: run validity: {flag['message']}")
    for other, pair in (metrics.get("comparison") or {}).get("pairs", {}).items():
        base = metrics["comparison"]["baseline"]
        ttft = pair["deltas"].get("ttft", {})
        if ttft.get("median_delta") is not None and ttft.get("share_b_lower") is not None:
            p = ttft.get("p_holm")
            lines.append(
                f"paired ({pair['paired_requests']} requests): TTFT {pair.get('quantity', QUANTITY['paired'])} "
                f"(b {other}, a {base}) "
                f"{ttft['median_delta'] * 1e3:+.0f} ms, lower for {ttft['share_b_lower']:.0%} of requests"
                + (f", {ttft['test']} p={p:.2g} (Holm-adjusted)" if p is not None else "")
            )
    lines += _prefix_cache_lines(metrics)
    lines += _reasoning_lines(metrics)
    lines += [f"{engine}: {line}" for engine, s in metrics["engines"].items() if (line := describe_unseen(s))]
    lines += [f"{e}: {describe_jobs(s['jobs'])}" for e, s in metrics["engines"].items() if s.get("jobs")]
    lines += [s for e, summary in metrics["engines"].items() if (s := describe_spec_decode(e, summary))]
    # a simulated cluster's router says the same in its CLUSTER line; a real fleet's replicas are said here
    replicas = {e: r for e, s in metrics["engines"].items() if (r := s.get("replicas")) and r["named_by"] == "server"}
    lines += [describe_replicas(e, r) for e, r in replicas.items()]
    lines += [line for e, summary in metrics["engines"].items() if (line := describe_serving_path(e, summary))]
    for engine, repeat in (metrics.get("repeat") or {}).items():
        ttft = repeat["ttft_p99_s"]
        if ttft["n"] > 1 and ttft["ci_low"] is not None:
            spread = (
                "every trial identical (a deterministic engine or the same seed): no run-to-run noise"
                if identical_trials(ttft["values"])  # a zero-width CI from copies is not certainty
                else f"95% CI {ttft['ci_low'] * 1e3:.0f} to {ttft['ci_high'] * 1e3:.0f} ms"
            )
            lines.append(f"{engine}: TTFT p99 over {ttft['n']} trials {ttft['mean'] * 1e3:.0f} ms ({spread})")
    return "\n".join(lines)


def _prefix_cache_lines(metrics: dict[str, Any]) -> list[str]:
    """Measured hit rate per engine beside the workload's predicted one; TTFT p50 by turn for sessions."""
    lines = []
    for view in prefix_cache_views(metrics["engines"], metrics.get("prefix_cache_predicted")):
        line = f"{view.engine}: prefix cache hit rate {view.measured}"
        if view.predicted:
            line += f" (unbounded cache on this schedule: {view.predicted})"
        lines.append(line)
        if view.turns:
            cells = [f"{t['turn']}: {t['ttft_p50'] * 1e3:.0f} ms" for t in view.turns[:8] if t["ttft_p50"] is not None]
            lines.append(f"{view.engine}: TTFT p50 by turn  " + ", ".join(cells))
    return lines


def _ms(block: dict[str, Any], label: str = "p50") -> str:
    value = block["percentiles"].get(label, {}).get("value")
    return "n/a" if value is None else f"{value * 1e3:.0f} ms"


def _reasoning_lines(metrics: dict[str, Any]) -> list[str]:
    """Per engine with reasoning tokens: the two channels, TTFO beside TTFT, and requests that never answered."""
    lines = []
    for engine, summary in metrics["engines"].items():
        r = summary.get("reasoning")
        if r is None:
            continue
        total = r["reasoning_tokens"] + r["content_tokens"]
        lines.append(
            f"{engine}: reasoning {r['reasoning_tokens']} of {total} output tokens in {r['requests_with_reasoning']} "
            f"requests; TTFO p50 {_ms(r['ttfo'])} (TTFT p50 {_ms(summary['latency']['ttft'])}), TPOT p50 "
            f"reasoning {_ms(r['tpot_reasoning'])}, content {_ms(r['tpot_content'])}"
        )
        if r["exhausted"]:
            lines.append(
                f"! {engine}: {r['exhausted']} requests spent all of max_tokens reasoning and gave no answer "
                f"({', '.join(r['exhausted_ids'][:3])}{', ...' if r['exhausted'] > 3 else ''})"
            )
    return lines


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _worker_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Sharded load generation: per worker, offered vs achieved rate and schedule lag; the clock flag."""
    lines = []
    for run in runs:
        sharding = run.get("sharding") or {}
        for w in run.get("workers", []):
            lag = "-" if w["lag_p99_ms"] is None else f"{w['lag_p99_ms']:.2f} ms"
            lines.append(
                f"{run['engine']} t{run['trial']} worker {w['worker']}: {w['requests']} requests, offered "
                f"{_rate(w['offered_rps'])} req/s, achieved {_rate(w['achieved_rps'])} req/s, lag p99 {lag}"
            )
        if sharding:
            worst = max((c["uncertainty_s"] for c in sharding["clock_offsets"]), default=0.0)
            lines.append(
                f"{run['engine']} t{run['trial']}: {sharding['workers']} workers split by {sharding['split_by']}, "
                f"clock offsets known to {worst * 1e3:.3f} ms"
            )
            if sharding.get("clock_flag"):
                lines.append(f"! {run['engine']} t{run['trial']}: {sharding['clock_flag']}")
    return lines


def print_summary(metrics: dict[str, Any]) -> None:
    print(format_summary(metrics))


def run_failure(metrics: dict[str, Any]) -> str | None:
    """One line saying why the run as a whole failed, or None: an engine died, or every request failed."""
    for run in metrics["runs"]:
        stopped = run.get("stopped_early") or {}
        if stopped.get("rule") == "engine_failure":
            return (
                f"engine {run['engine']} (trial {run['trial']}) failed: {stopped.get('message')}; "
                f"{stopped.get('not_sent', 0)} of its requests were never sent"
            )
    for run in metrics["runs"]:
        requests = run["summary"]["requests"]
        if requests["total"] and not requests["succeeded"]:
            kinds = requests.get("failures_by_type") or {}
            if not kinds and run.get("stopped_early"):
                continue  # a stop rule aborted all it had sent: the stop line says why, and that is a result
            top = max(kinds, key=kinds.get) if kinds else "unknown"  # type: ignore[arg-type]
            example = run.get("first_error") or "-"
            return (
                f"every request to engine {run['engine']} (trial {run['trial']}) failed "
                f"({requests['failed']} of {requests['total']}, mostly {top}: {example})"
            )
    return None
