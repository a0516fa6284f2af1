"""GuideLLM's benchmarks report (`benchmarks.json`: `guidellm benchmark --output-path`, or from 0.8
`guidellm run --output kind=json,path=...`).

Schema read: GuideLLM's `GenerativeBenchmarksReport` (src/guidellm/benchmark/schemas/generative/*.py,
the 0.4-0.5 series, 0.8.1 (a file it wrote here: tests/importers/fixtures/guidellm-0.8.1)
and 2026 main): `{"args": ..., "benchmarks": [...]}`, each benchmark with `config`
(`strategy`: `type_` and its `rate` or `streams`), `metrics` (per metric a `StatusDistributionSummary`:
`successful` / `incomplete` / `errored` / `total`, each with `mean`, `median`, `count` and
`percentiles` `p001` ... `p999`) and `requests` (`successful`, `incomplete`, `errored` lists of
`GenerativeRequestStats`: `request_id`, `prompt_tokens`, `output_tokens`, and `info.timings` with unix
times `targeted_start`, `request_start`, `first_token_iteration`, `last_token_iteration`,
`token_iterations`, `request_end`). GuideLLM keeps a sample of the requests (`sample_requests`), so the
records may be fewer than the requests it measured; the importer says so.

Definitions that differ: GuideLLM's `time_per_output_token_ms` is (last token - send) / n, so it
includes the first token's wait; its `inter_token_latency_ms` is (last token - first token) / (n - 1),
batchmark's TPOT up to the time between the last token and the finish. Its TTFT and request latency run
from the send (batchmark's `ttft_sent`, `e2e_sent`); `targeted_start` is when its scheduler meant to
send, batchmark's scheduled arrival. GuideLLM records no per-token times: the records space a request's
stream iterations evenly between its first and last token, as GuideLLM itself does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.importers.common import (
    Imported,
    ImportedRun,
    Mapping,
    Reported,
    arrival_check,
    fail,
    in_span,
    number,
    record,
    spread_evenly,
    within_request,
)
from harness.importers.schema import (
    Clock,
    Count,
    Doc,
    OutputTokens,
    Positive,
    PromptTokens,
    Seconds,
    Users,
    check_total_tokens,
    validated,
)
from harness.loadgen.scenarios import Scenario

SCHEMA = "GuideLLM GenerativeBenchmarksReport (benchmarks.json, 0.4-0.5 series, 0.8.1 and 2026 main)"
STATUSES = (("successful", None), ("incomplete", "aborted"), ("errored", "error"))
# GuideLLM's percentile names -> batchmark's
PERCENTILES = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}
DISTRIBUTIONS = (
    Mapping("ttft_sent", "time_to_first_token_ms", "from the send: batchmark's ttft_sent"),
    Mapping(
        "tpot",
        "inter_token_latency_ms",
        "GuideLLM's ITL is (last - first token) / (n - 1) per request: "
        "batchmark's TPOT (which ends at the finish, not the last token)",
    ),
    Mapping(
        "guidellm_tpot",
        "time_per_output_token_ms",
        "GuideLLM's TPOT is (last token - send) / n: it includes "
        "the first token's wait, unlike batchmark's TPOT; compare "
        "with e2e_sent / n",
    ),
    Mapping("e2e_sent", "request_latency", "from the send to the end: batchmark's e2e_sent (GuideLLM reports it in s)"),
)
RATES = (
    (
        "request_rate",
        "requests_per_second",
        "req/s",
        "GuideLLM's mean of instantaneous rates over its measured "
        "window (warm-up and cool-down cut), not a count / duration",
    ),
    ("output_token_rate", "output_tokens_per_second", "tok/s", "as requests_per_second, for output tokens"),
    ("total_token_rate", "tokens_per_second", "tok/s", "as requests_per_second, for prompt + output tokens"),
)


class Summary(Doc):
    """One status of a `StatusDistributionSummary` (ms, s or per second, as the metric says)."""

    mean: Seconds | None = None
    median: Seconds | None = None
    count: Count | None = None
    percentiles: dict[str, Seconds | None] | None = None


class StatusSummary(Doc):
    successful: Summary | None = None
    total: Summary | None = None


class Totals(Doc):
    total: Count | None = None


class Metrics(Doc):
    """The metrics the importer reads; GuideLLM writes more."""

    request_totals: Totals | None = None
    time_to_first_token_ms: StatusSummary | None = None
    inter_token_latency_ms: StatusSummary | None = None
    time_per_output_token_ms: StatusSummary | None = None
    request_latency: StatusSummary | None = None
    requests_per_second: StatusSummary | None = None
    output_tokens_per_second: StatusSummary | None = None
    tokens_per_second: StatusSummary | None = None


class Strategy(Doc):
    type_: str | None = None
    rate: Positive | None = None
    streams: Users | None = None
    max_concurrency: Users | None = None


class Config(Doc):
    strategy: Strategy | None = None


class Timings(Doc):
    """Unix times of one request's life (GuideLLM's `RequestTimings`), and its stream's iterations."""

    targeted_start: Clock | None = None
    request_start: Clock | None = None
    first_token_iteration: Clock | None = None
    last_token_iteration: Clock | None = None
    token_iterations: Count | None = None
    request_end: Clock | None = None
    resolve_end: Clock | None = None


class Info(Doc):
    timings: Timings | None = None
    error: str | None = None


class PromptTotals(Doc):
    total_tokens: PromptTokens | None = None


class OutputTotals(Doc):
    total_tokens: OutputTokens | None = None


class Request(Doc):
    request_id: str | None = None
    prompt_tokens: PromptTokens | None = None
    output_tokens: OutputTokens | None = None
    info: Info
    input_metrics: PromptTotals | None = None
    output_metrics: OutputTotals | None = None

    @property
    def tokens(self) -> int:
        return self.output_tokens or (self.output_metrics.total_tokens if self.output_metrics else None) or 0


class Requests(Doc):
    successful: list[Request] | None = None
    incomplete: list[Request] | None = None
    errored: list[Request] | None = None


class Benchmark(Doc):
    config: Config | None = None
    metrics: Metrics | None = None
    requests: Requests | None = None


class Report(Doc):
    """GuideLLM's `GenerativeBenchmarksReport`, the parts the importer reads."""

    benchmarks: list[Benchmark]


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list)


def parse(data: dict[str, Any], path: Path, label: str | None = None) -> Imported:
    report = validated(Report, data, path)
    lists = [getattr(b.requests, status) or [] for b in report.benchmarks if b.requests for status, _ in STATUSES]
    check_total_tokens(path, "field benchmarks", sum(r.tokens for requests in lists for r in requests))
    benchmarks = data["benchmarks"]
    if not benchmarks:
        raise fail(path, "field benchmarks", "the report holds no benchmark")
    runs = []
    for b, bench in enumerate(benchmarks):
        if not isinstance(bench, dict):
            raise fail(path, f"field benchmarks[{b}]", f"expected an object, got {type(bench).__name__}")
        name = _name(bench, b)
        run_label = f"{label or 'guidellm'}-{name}" if len(benchmarks) > 1 or not label else label
        strategy = report.benchmarks[b].config.strategy if report.benchmarks[b].config else None
        run = ImportedRun(
            run_label,
            None,
            settings={"strategy": (bench.get("config") or {}).get("strategy")},
            scenario=scenario_of(strategy),
        )
        if run.scenario.kind != "open" and strategy is not None:
            run.notes.append(
                f"GuideLLM's {strategy.type_} strategy: imported as batchmark's {run.scenario.kind} scenario "
                "(a closed loop's arrival is its send: a wait for a free stream is not lag)"
            )
        run.reported = _reported(bench.get("metrics") or {})
        requests = bench.get("requests")
        if isinstance(requests, dict) and any(requests.get(s) for s, _ in STATUSES):
            run.records = _records(requests, path, f"benchmarks[{b}].requests", run_label, run.scenario)
            _check_arrivals(run, strategy, (bench.get("config") or {}).get("strategy"))
            measured = ((bench.get("metrics") or {}).get("request_totals") or {}).get("total")
            if isinstance(measured, int) and measured > len(run.records):
                run.notes.append(
                    f"GuideLLM kept a sample of {len(run.records)} of the {measured} requests it "
                    "measured: the records are that sample"
                )
        else:
            run.notes.append("no per-request data in this benchmark: only GuideLLM's own aggregates are shown")
        runs.append(run)
    return Imported("guidellm", SCHEMA, path, runs)


# Why GuideLLM's Poisson gaps repeat, read in 0.8.1's scheduler/strategies.py: AsyncPoissonStrategy.next_request_time
# draws from one random.Random(random_seed) per worker process, every worker seeded alike, and each worker adds its
# draw to one shared offset, so the workers repeat each other's gaps in turn. Said only when the data show it.
WHY_REPEATED = "GuideLLM 0.8.1 seeds one generator per worker process alike"


def _check_arrivals(run: ImportedRun, strategy: Strategy | None, raw: Any) -> None:
    """The arrival check of a `poisson` run (`common.arrival_check`): its numbers in the settings, and the note
    when the schedule's gaps repeat, naming the worker count the file states (the expected run length)."""
    workers = raw.get("worker_count") if isinstance(raw, dict) else None
    why = WHY_REPEATED + (f": {workers} workers here" if isinstance(workers, int) and workers > 1 else "")
    scheduled = [r.t_scheduled for r in run.records or []]
    check = arrival_check(scheduled, strategy.type_ if strategy else None, strategy.rate if strategy else None, why)
    if check is None:
        return
    run.settings["arrival_gaps"] = check.settings()
    if check.note:
        run.notes.append(check.note)


def _name(bench: dict[str, Any], index: int) -> str:
    strategy = (bench.get("config") or {}).get("strategy") or {}
    kind = str(strategy.get("type_") or f"benchmark{index}")
    for key in ("rate", "streams", "max_concurrency"):
        if isinstance(strategy.get(key), int | float):
            return f"{kind}-{strategy[key]:g}"
    return kind


def _reported(metrics: dict[str, Any]) -> dict[str, Reported]:
    out: dict[str, Reported] = {}
    for m in DISTRIBUTIONS:
        summary = (metrics.get(m.theirs) or {}).get("successful") or {}
        if not summary:
            continue
        scale = 1.0 if m.theirs == "request_latency" else 1e-3
        pct = {
            ours: float(v) * scale
            for theirs, ours in PERCENTILES.items()
            if isinstance(v := (summary.get("percentiles") or {}).get(theirs), int | float)
        }
        mean = summary.get("mean")
        out[m.ours] = Reported(m, "s", None if mean is None else float(mean) * scale, pct, summary.get("count"))
    for ours, theirs, unit, note in RATES:
        mean = ((metrics.get(theirs) or {}).get("successful") or {}).get("mean")
        if isinstance(mean, int | float):
            out[ours] = Reported(Mapping(ours, theirs, note), unit, float(mean))
    return out


def scenario_of(strategy: Strategy | None) -> Scenario:
    """GuideLLM's scheduling strategy as batchmark's scenario: `synchronous` is one user, `concurrent` a closed
    loop of `streams` users, `throughput` every request at once (offline); `constant`, `poisson` and the rest
    send on a schedule (open)."""
    kind = strategy.type_ if strategy else None
    if kind == "synchronous":
        return Scenario("closed", users=1)
    if kind == "concurrent" and strategy and strategy.streams:
        return Scenario("closed", users=strategy.streams)
    if kind == "throughput":
        return Scenario("offline")
    return Scenario("open")


def _records(requests: dict[str, Any], path: Path, where: str, label: str, scenario: Scenario) -> list[Any]:
    rows: list[tuple[str | None, str, dict[str, Any]]] = []
    for status, failure in STATUSES:
        for i, req in enumerate(requests.get(status) or []):
            if not isinstance(req, dict) or not isinstance(req.get("info"), dict):
                raise fail(path, f"field {where}.{status}[{i}]", "expected a request with an info.timings object")
            rows.append((failure, f"{where}.{status}[{i}]", req))
    timings = [(req["info"].get("timings") or {}) for _, _, req in rows]
    starts = []
    for (_, at, _), t in zip(rows, timings, strict=True):
        start = t.get("targeted_start", t.get("request_start"))
        starts.append(number(start, path, f"field {at}.info.timings.request_start", optional=True))
    known = [s for s in starts if s is not None]
    if not known:
        raise fail(path, f"field {where}", "no request has a request_start time")
    t0 = min(known)
    out = []
    for (failure, at, req), t, start in zip(rows, timings, starts, strict=True):
        sent_abs = number(t.get("request_start", start), path, f"field {at}.info.timings.request_start", optional=True)
        sent = in_span((sent_abs if sent_abs is not None else t0) - t0, path, f"field {at}.info.timings.request_start")
        scheduled = in_span((start if start is not None else t0) - t0, path, f"field {at}.info.timings.request_start")
        if scenario.kind == "closed":  # its users send when they are free: the arrival is the send
            scheduled = sent
        end = number(
            t.get("request_end", t.get("resolve_end")), path, f"field {at}.info.timings.request_end", optional=True
        )
        prompt = req.get("prompt_tokens") or (req.get("input_metrics") or {}).get("total_tokens") or 0
        tokens = int(req.get("output_tokens") or (req.get("output_metrics") or {}).get("total_tokens") or 0)
        first = number(
            t.get("first_token_iteration"), path, f"field {at}.info.timings.first_token_iteration", optional=True
        )
        last = number(
            t.get("last_token_iteration"), path, f"field {at}.info.timings.last_token_iteration", optional=True
        )
        times: list[float] = []
        for name, value in (("request_end", end), ("first_token_iteration", first), ("last_token_iteration", last)):
            if value is not None:
                in_span(value - t0, path, f"field {at}.info.timings.{name}")
        if first is not None and tokens > 0:
            times = spread_evenly(
                first - t0, (last if last is not None else first) - t0, int(t.get("token_iterations") or tokens), tokens
            )
        if failure is None:  # a failed request's token times are dropped, so only a success's must be whole
            at_t = f"field {at}.info.timings"
            within_request(
                path,
                times,
                sent,
                None if end is None else end - t0,
                (f"{at_t}.first_token_iteration", f"{at_t}.last_token_iteration"),
            )
        error = str(req["info"].get("error") or "errored") if failure == "error" else None
        out.append(
            record(
                label,
                str(req.get("request_id") or at),
                scheduled=scheduled,
                sent=sent,
                prompt_tokens=int(prompt),
                token_times=times if failure is None else [],
                finish=None if end is None or failure is not None else end - t0,
                error=error,
                aborted=failure == "aborted",
            )
        )
    return out
