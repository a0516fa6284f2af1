"""llm-d's Benchmark Report v0.2: the result schema llm-d-benchmark's harnesses and inference-perf emit, read.

Schema: `benchmark_report/schema_v0_2.py` and `benchmark_report/base.py` (units) in llm-d/llm-d-benchmark at
commit 093eecc2a566926f4fccc2d2f50af5d9105bb6ed. A report is one run's aggregates: `version` "0.2", `run`
(ids, times), `scenario.load.standardized` (tool, sequence lengths, `rate_qps` or `concurrency`) and
`results.request_performance.aggregate` with `requests` (total, failures, input/output length),
`latency` (`time_to_first_token`, `time_per_output_token`, `inter_token_latency`, `request_latency`,
`normalized_time_per_output_token`) and `throughput` (`request_rate`, `output_token_rate`,
`total_token_rate`, `input_token_rate`), each a `Statistics` block: `units`, `mean`, `stddev`, `min`,
`max` and percentiles `p0p1` ... `p99p9`. There is no per-request data, so an import holds aggregates
only. `harness.importers.llmd_write` writes a batchmark run as one. inference-perf's per-stage reports have no
`scenario` block; their load is read from the `config.yaml` inference-perf writes beside them (`inference_perf_load`).

The report does not say from when its tool timed TTFT and latency; inference-perf, vLLM and GuideLLM time
from the send, so they are read as batchmark's `ttft_sent` and `e2e_sent` (and batchmark exports those).
Nor does it say how its tool counted TPOT: inference-perf 0.7.0's is (last content chunk - first content chunk)
/ (n - 1), n its re-tokenized output count (`inference_perf/reportgen/br/v0_2/adapter.py`,
`_per_request_latencies`), so it leaves out the time after the last chunk that batchmark's TPOT (to the finish)
and vLLM's (E2E - TTFT) / (n - 1) include.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from harness.importers import inference_perf_load
from harness.importers.common import Imported, ImportedRun, Mapping, Reported
from harness.importers.schema import MAX_USERS, Count, Doc, Positive, Seconds, validated
from harness.loadgen.scenarios import Scenario

VERSION = "0.2"
# v0.2.1 (inference-perf 0.7.0's `inference-perf.partial.stage_N.yaml`) only adds optional multimodal statistics
VERSIONS = (VERSION, "0.2.1")
SCHEMA = "llm-d Benchmark Report v0.2 (llm-d/llm-d-benchmark benchmark_report/schema_v0_2.py @ 093eecc)"
# batchmark's percentile label -> the report's key
PERCENTILES = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p99.9": "p99p9"}
TIME_UNITS = {"ms": 1e-3, "s": 1.0}
PER_TOKEN_UNITS = {"ms/token": 1e-3, "s/token": 1.0}
DISTRIBUTIONS = (
    Mapping("ttft_sent", "time_to_first_token", "read as from the send, as inference-perf, vLLM and GuideLLM time it"),
    Mapping(
        "tpot",
        "time_per_output_token",
        "(last content chunk - first content chunk) / (n - 1) in inference-perf, n re-tokenized from the text unless "
        "report.use_server_output_tokens; (E2E - TTFT) / (n - 1) in vLLM: batchmark's TPOT, which ends at the finish",
    ),
    Mapping("itl", "inter_token_latency", "per chunk in most tools (vLLM, AIPerf): per token only if chunks are"),
    Mapping("e2e_sent", "request_latency", "read as from the send to the last token"),
    Mapping("ntpot", "normalized_time_per_output_token", "request latency / output tokens: includes the first token"),
)
RATES = (
    ("request_rate", "request_rate", "req/s", "the tool's rate over its run (batchmark exports its whole-run rate)"),
    ("output_token_rate", "output_token_rate", "tok/s", "as request_rate, for output tokens"),
    ("total_token_rate", "total_token_rate", "tok/s", "as request_rate, for prompt + output tokens"),
)
LENGTHS = (("prompt_tokens", "input_length"), ("output_tokens", "output_length"))
PARTIAL = re.compile(r"inference-perf\.partial\.stage_(\d+)\.ya?ml$")  # inference-perf 0.7.0's per-stage report


class Statistics(Doc):
    units: str
    mean: Seconds
    stddev: Seconds | None = None
    min: Seconds | None = None
    max: Seconds | None = None
    p50: Seconds | None = None
    p90: Seconds | None = None
    p95: Seconds | None = None
    p99: Seconds | None = None
    p99p9: Seconds | None = None


class TimeStatistics(Statistics):
    units: Literal["ms", "s"]


class PerTokenStatistics(Statistics):
    units: Literal["ms/token", "s/token"]


class Latency(Doc):
    time_to_first_token: TimeStatistics | None = None
    time_per_output_token: PerTokenStatistics | None = None
    inter_token_latency: PerTokenStatistics | None = None
    request_latency: TimeStatistics | None = None
    normalized_time_per_output_token: PerTokenStatistics | None = None


class TokenRate(Statistics):
    units: Literal["tokens/s"]


class Throughput(Doc):
    request_rate: Statistics | None = None
    output_token_rate: TokenRate | None = None
    total_token_rate: TokenRate | None = None
    input_token_rate: TokenRate | None = None


class Lengths(Statistics):
    units: Literal["count"]


class Requests(Doc):
    total: Count
    failures: Count | None = None
    incomplete: Count | None = None
    input_length: Lengths | None = None
    output_length: Lengths | None = None


class Aggregate(Doc):
    requests: Requests | None = None
    latency: Latency | None = None
    throughput: Throughput | None = None


class RequestPerformance(Doc):
    aggregate: Aggregate | None = None


class Results(Doc):
    request_performance: RequestPerformance | None = None


def _users_or_all(value: float) -> float:
    """A closed loop's users (a whole number, bounded as every import's users are) or infinity (all at once)."""
    if value != float("inf") and (value != int(value) or value > MAX_USERS):
        raise ValueError(f"a whole number of users up to {MAX_USERS}, or .inf (every request at once)")
    return value


class LoadStandardized(Doc):
    tool: str | None = None
    tool_version: str | None = None
    rate_qps: Positive | None = None
    concurrency: Annotated[float, Field(strict=True, ge=1), AfterValidator(_users_or_all)] | None = None


class Load(Doc):
    standardized: LoadStandardized | None = None


class ReportScenario(Doc):
    load: Load | None = None


class RunTime(Doc):
    start: str | None = None
    end: str | None = None
    duration: str | None = None


class Run(Doc):
    uid: str | None = None
    eid: str | None = None
    time: RunTime | None = None


class Report(Doc):
    """The parts of a Benchmark Report v0.2 batchmark reads (every other key is allowed and kept aside)."""

    version: Literal["0.2", "0.2.1"]
    run: Run
    scenario: ReportScenario | None = None
    results: Results


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and data.get("version") in VERSIONS and "results" in data and "run" in data


def parse(data: dict[str, Any], path: Path, label: str | None = None) -> Imported:
    report = validated(Report, data, path)
    load = report.scenario.load.standardized if report.scenario and report.scenario.load else None
    # inference-perf's per-stage partial reports name no tool, but their run ids start with it
    named = (report.run.uid or "").startswith("inference-perf-")
    tool = (load.tool if load else None) or ("inference-perf" if named else "llm-d-br")
    aggregate = report.results.request_performance.aggregate if report.results.request_performance else None
    run = ImportedRun(label or tool, None, settings=_settings(report, load), scenario=scenario_of(load))
    run.reported = reported(aggregate) if aggregate else {}
    run.notes.append(
        f"a Benchmark Report v{report.version} written by {tool} {load.tool_version if load else ''}".rstrip()
    )
    if load is None or (load.concurrency is None and load.rate_qps is None):
        beside = _inference_perf_load(path)
        if beside is None:
            stated = "scenario.load.standardized: rate_qps or concurrency"
            run.notes.append(f"the report states no load ({stated}): {inference_perf_load.UNKNOWN}")
        else:  # inference-perf's partial report states no load, but the config.yaml it wrote beside it does
            run.scenario, run.notes = beside.scenario, run.notes + beside.notes
            run.settings.update(beside.settings)
            run.reported.update(beside.reported)
    return Imported("llm-d-benchmark-report", SCHEMA, path, [run])


def _inference_perf_load(path: Path) -> inference_perf_load.Load | None:
    """The load of an inference-perf partial report (`<prefix>inference-perf.partial.stage_N.yaml`) from the
    `config.yaml` beside it, for stage N (`inference_perf_load`); None for any other file or without config.yaml."""
    found = PARTIAL.search(path.name)
    return inference_perf_load.beside(path, found.group(0), int(found.group(1))) if found else None


def scenario_of(load: LoadStandardized | None) -> Scenario:
    """A fixed `concurrency` is a closed loop, an infinite one offline; a `rate_qps` an open loop."""
    if load and load.concurrency is not None:
        return Scenario("offline") if load.concurrency == float("inf") else Scenario("closed", int(load.concurrency))
    return Scenario("open")


def _settings(report: Report, load: LoadStandardized | None) -> dict[str, Any]:
    out: dict[str, Any] = {"uid": report.run.uid, "eid": report.run.eid}
    if report.run.time:
        out.update(start=report.run.time.start, duration=report.run.time.duration)
    if load:
        out.update(tool=load.tool, tool_version=load.tool_version, rate_qps=load.rate_qps, concurrency=load.concurrency)
    return out


def reported(aggregate: Aggregate) -> dict[str, Reported]:
    """The report's statistics under batchmark's names, in seconds (latencies) or per second (rates)."""
    out: dict[str, Reported] = {}
    requests = aggregate.requests
    count = requests.total - (requests.failures or 0) - (requests.incomplete or 0) if requests else None
    for m in DISTRIBUTIONS:
        stats = getattr(aggregate.latency, m.theirs, None) if aggregate.latency else None
        if stats is not None:
            scale = {**TIME_UNITS, **PER_TOKEN_UNITS}[stats.units]
            out[m.ours] = _reported(m, stats, "s", scale, count)
    for ours, theirs, unit, note in RATES:
        stats = getattr(aggregate.throughput, theirs, None) if aggregate.throughput else None
        if stats is not None:
            out[ours] = _reported(Mapping(ours, theirs, note), stats, unit, 1.0, None)
    for ours, theirs in LENGTHS:
        stats = getattr(requests, theirs, None) if requests else None
        if stats is not None:
            out[ours] = _reported(Mapping(ours, theirs, "tokens per request"), stats, "tokens", 1.0, count)
    if requests:
        out["requests"] = Reported(Mapping("requests", "requests.total", ""), "requests", float(requests.total))
        if requests.failures is not None:
            out["failed"] = Reported(Mapping("failed", "requests.failures", ""), "requests", float(requests.failures))
    return out


def _reported(m: Mapping, stats: Statistics, unit: str, scale: float, count: int | None) -> Reported:
    pct = {ours: v * scale for ours, theirs in PERCENTILES.items() if (v := getattr(stats, theirs)) is not None}
    return Reported(m, unit, stats.mean * scale, pct, count)
