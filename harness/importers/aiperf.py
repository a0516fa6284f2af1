"""AIPerf's profile exports: `profile_export.jsonl` (one record per request) or `profile_export_aiperf.json`
(aggregates).

Schema read: AIPerf's docs (docs/tutorials/working-with-profile-exports.md and
docs/reference/json-export-schema.md, AIPerf 0.7-0.14, JSON schema_version 1.0-1.5). A JSONL line is
`{"metadata": {"x_request_id", "request_start_ns", "request_end_ns", "benchmark_phase", "was_cancelled",
...}, "metrics": {TAG: {"value", "unit"}}, "error": null | {"code", "type", "message"}}` with tags such
as `time_to_first_token`, `request_latency`, `inter_chunk_latency` (a list: every gap between chunks),
`output_sequence_length`, `input_sequence_length`. The JSON holds per tag a block `{"unit", "avg",
"min", "max", "p1" ... "p99", "std", "count"}` and `schema_version`, `aiperf_version`, `input_config`.

Definitions that differ: AIPerf's "inter_token_latency" is (E2E - TTFT) / (OSL - 1), batchmark's TPOT;
its "inter_chunk_latency" is the chunk gaps, batchmark's ITL when every chunk carries one token. Its TTFT
and latency run from the send (batchmark's `ttft_sent`, `e2e_sent`); it records no scheduled time, so an
imported arrival is the send. Warm-up requests (`benchmark_phase` "warmup") are left out, as AIPerf does.

Output tokens: AIPerf's OSL (`output_sequence_length`, `output_token_count`) re-tokenizes the streamed text with
its `--tokenizer` unless it ran with `--use-server-token-count`, and its output_token_throughput and ITL count
that; a record also holds the server's own count, `usage_completion_tokens` (the response's
`usage.completion_tokens`, AIPerf 0.13: `aiperf/metrics/types/usage_metrics.py`). A record's output tokens are
the server's count where the record has it, as batchmark counts its own runs; AIPerf's OSL only where it has not,
and a note says which was used and how far the two counts differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.importers.common import (
    UNITS,
    CountNames,
    Imported,
    ImportedRun,
    Mapping,
    OutputCount,
    Reported,
    chunk_note,
    count_notes,
    fail,
    failed,
    in_span,
    number,
    streamed,
)
from harness.importers.schema import (
    Count,
    Doc,
    Nanoseconds,
    OutputTokens,
    PromptTokens,
    Seconds,
    TimeUnit,
    check_total_tokens,
    validated,
)
from harness.loadgen.scenarios import Scenario

SCHEMA = "AIPerf profile export (profile_export.jsonl / profile_export_aiperf.json, AIPerf 0.7-0.14)"
DISTRIBUTIONS = (
    Mapping("ttft_sent", "time_to_first_token", "from the send: batchmark's ttft_sent"),
    Mapping(
        "tpot",
        "inter_token_latency",
        "AIPerf's ITL is (E2E - TTFT) / (OSL - 1): batchmark's TPOT, but over AIPerf's OSL (re-tokenized unless "
        "--use-server-token-count), not the server's count the records take",
    ),
    Mapping(
        "itl",
        "inter_chunk_latency",
        "every gap between streamed chunks (AIPerf's ICL): batchmark's ITL when each chunk carries one token",
    ),
    Mapping("e2e_sent", "request_latency", "from the send to the last response: batchmark's e2e_sent"),
)
RATES = (
    ("request_rate", "request_throughput", "req/s", "requests / profiling duration: batchmark's whole-run rate"),
    ("output_token_rate", "output_token_throughput", "tok/s", "OSL / profiling duration: whole-run, AIPerf's OSL"),
)
OSL_NOTE = "re-tokenized from the streamed text unless --use-server-token-count"
COUNTS = CountNames(
    server="usage.completion_tokens, AIPerf's usage_completion_tokens",
    missing="usage_completion_tokens",
    own="AIPerf's own OSL",
    short="AIPerf's OSL",
    how=OSL_NOTE,
    uses="its output_token_throughput and inter_token_latency divide by the OSL",
)
AIPERF_PERCENTILES = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}


class Time(Doc):
    value: Seconds
    unit: TimeUnit = "ms"


class Gaps(Doc):
    value: list[Seconds]
    unit: TimeUnit = "ms"


class Prompt(Doc):
    value: PromptTokens


class Output(Doc):
    value: OutputTokens


class LineMetrics(Doc):
    """The tags the importer reads from a record's `metrics`; AIPerf writes more."""

    time_to_first_token: Time | None = None
    request_latency: Time | None = None
    inter_chunk_latency: Gaps | None = None
    input_sequence_length: Prompt | None = None
    output_sequence_length: Output | None = None
    output_token_count: Output | None = None
    usage_completion_tokens: Output | None = None  # the server's usage.completion_tokens


class LineMeta(Doc):
    x_request_id: str | None = None
    request_start_ns: Nanoseconds
    request_end_ns: Nanoseconds | None = None
    benchmark_phase: str | None = None
    was_cancelled: bool | None = None


class LineError(Doc):
    type: str | None = None
    message: str | None = None


class Line(Doc):
    """One request of `profile_export.jsonl`."""

    metadata: LineMeta
    metrics: LineMetrics
    error: LineError | None = None


class Block(Doc):
    """One metric's aggregate in `profile_export_aiperf.json`."""

    unit: str = "ms"
    avg: Seconds | None = None
    p50: Seconds | None = None
    p90: Seconds | None = None
    p95: Seconds | None = None
    p99: Seconds | None = None
    count: Count | None = None


class TimeBlock(Block):
    unit: TimeUnit = "ms"


class Blocks(Doc):
    request_count: Block | None = None
    output_sequence_length: Block | None = None
    time_to_first_token: TimeBlock | None = None
    inter_token_latency: TimeBlock | None = None
    inter_chunk_latency: TimeBlock | None = None
    request_latency: TimeBlock | None = None
    request_throughput: Block | None = None
    output_token_throughput: Block | None = None


class Aggregates(Blocks):
    records: Blocks | None = None  # early exports nested the metric blocks here


def looks_like_jsonl(first: Any) -> bool:
    return isinstance(first, dict) and "metadata" in first and "metrics" in first


def looks_like_json(data: Any) -> bool:
    """Either metric block as a dictionary: a file with one of them mistyped is still AIPerf's, and its
    validation then names the field."""
    blocks = data.get("records", data) if isinstance(data, dict) else None
    return isinstance(blocks, dict) and any(
        isinstance(blocks.get(name), dict) for name in ("time_to_first_token", "request_latency")
    )


def parse_jsonl(path: Path, lines: list[tuple[int, dict[str, Any]]], label: str | None = None) -> Imported:
    label = label or "aiperf"
    checked = [validated(Line, obj, path, f"line {n}: ") for n, obj in lines]
    counts = [output_count(line.metrics) for line in checked]
    check_total_tokens(path, "every line", sum(c.tokens or 0 for c in counts))
    rows = [
        (n, obj, count)
        for (n, obj), count in zip(lines, counts, strict=True)
        if (obj.get("metadata") or {}).get("benchmark_phase", "profiling") != "warmup"
    ]
    if not rows:
        raise fail(path, "every line", "no profiling-phase record (only warm-up, or an empty file)")
    starts = [_ns(path, n, obj["metadata"], "request_start_ns") for n, obj, _ in rows]
    t0 = min(starts)
    records, multi, used = [], 0, []
    for (n, obj, count), start in zip(rows, starts, strict=True):
        meta, metrics, error = obj.get("metadata") or {}, obj.get("metrics") or {}, obj.get("error")
        sent = in_span((start - t0) / 1e9, path, f"line {n}: field metadata.request_start_ns")
        end_ns = meta.get("request_end_ns")
        finish = None if end_ns is None else (_ns(path, n, meta, "request_end_ns") - t0) / 1e9
        if finish is not None:
            in_span(finish, path, f"line {n}: field metadata.request_end_ns")
        rid = str(meta.get("x_request_id") or f"aiperf-{n:06d}")
        prompt = int(_value(path, n, metrics, "input_sequence_length", "tokens") or 0)
        if error is not None or meta.get("was_cancelled"):
            message = f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict) else None
            records.append(
                failed(
                    label, rid, scheduled=sent, sent=sent, prompt_tokens=prompt, error=message, aborted=error is None
                )
            )
            continue
        ttft = _value(path, n, metrics, "time_to_first_token", "s")
        if ttft is None:
            raise fail(path, f"line {n}: field metrics.time_to_first_token", "missing (a non-streaming run?)")
        rec, many = streamed(
            label,
            rid,
            scheduled=sent,
            sent=sent,
            prompt_tokens=prompt,
            ttft=ttft,
            gaps=_value(path, n, metrics, "inter_chunk_latency", "s", many=True) or [],
            tokens=count.tokens or 0,
            finish=finish,
            path=path,
            fields=(f"line {n}: field metrics.time_to_first_token", f"line {n}: field metrics.inter_chunk_latency"),
        )
        records.append(rec)
        multi += many
        used.append(count)
    run = ImportedRun(label, records)
    run.notes.append("AIPerf records no scheduled arrival: each request's arrival is its send (TTFT = ttft_sent)")
    run.notes += count_notes(used, COUNTS)
    run.notes += chunk_note(multi, len(records))
    summary = path.with_name(path.name.replace(".jsonl", "_aiperf.json"))
    if summary != path and summary.is_file():
        aggregates = _read_json(summary)
        run.reported = _reported(aggregates)
        run.scenario = scenario_of(aggregates)
        run.notes.append(f"AIPerf's own aggregates read from {summary.name}")
    return Imported("aiperf", SCHEMA, path, [run])


def parse_json(data: dict[str, Any], path: Path, label: str | None = None) -> Imported:
    validated(Aggregates, data, path)
    run = ImportedRun(label or "aiperf", None, settings={"aiperf_version": data.get("aiperf_version")})
    run.reported = _reported(data)
    run.scenario = scenario_of(data)
    run.notes.append("aggregates only: profile_export.jsonl beside it holds the per-request records")
    return Imported("aiperf", SCHEMA + f", schema_version {data.get('schema_version', '?')}", path, [run])


def output_count(metrics: LineMetrics) -> OutputCount:
    """The server's `usage_completion_tokens` when the record has a positive one (0 with streamed text is no
    count), else AIPerf's OSL (`output_sequence_length`, or `output_token_count` in older exports)."""
    osl = metrics.output_sequence_length or metrics.output_token_count
    theirs = None if osl is None else osl.value
    usage = metrics.usage_completion_tokens
    if usage is not None and usage.value > 0:
        return OutputCount(usage.value, True, theirs)
    return OutputCount(theirs, False, theirs)


def scenario_of(aggregates: dict[str, Any]) -> Scenario:
    """AIPerf's profiling phase as batchmark's scenario: `concurrency` N without a request rate is a closed loop
    of N users (`input_config.phases`, AIPerf 0.13); anything else, or an export without it, an open loop (AIPerf
    records no scheduled arrival, so its arrivals are its sends either way)."""
    config = aggregates.get("input_config")
    phases = config.get("phases") if isinstance(config, dict) else None
    for phase in phases if isinstance(phases, list) else []:
        if isinstance(phase, dict) and phase.get("kind") == "profiling" and phase.get("type") == "concurrency":
            users = phase.get("concurrency")
            if isinstance(users, int) and not isinstance(users, bool) and users >= 1:
                return Scenario("closed", users=users)
    return Scenario("open")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise fail(path, "file", f"not readable JSON ({exc})") from None
    validated(Aggregates, data, path)
    return data


def _reported(data: dict[str, Any]) -> dict[str, Reported]:
    blocks = data.get("records", data)  # early exports nested the metric blocks under "records"
    out: dict[str, Reported] = {}
    for m in DISTRIBUTIONS:
        block = blocks.get(m.theirs)
        if not isinstance(block, dict):
            continue
        scale = UNITS.get(str(block.get("unit", "ms")), 1e-3)
        pct = {
            ours: float(block[theirs]) * scale
            for theirs, ours in AIPERF_PERCENTILES.items()
            if isinstance(block.get(theirs), int | float)
        }
        mean = block.get("avg")
        out[m.ours] = Reported(m, "s", None if mean is None else float(mean) * scale, pct, block.get("count"))
    for ours, theirs, unit, note in RATES:
        block = blocks.get(theirs)
        if isinstance(block, dict) and isinstance(block.get("avg"), int | float):
            out[ours] = Reported(Mapping(ours, theirs, note), unit, float(block["avg"]))
    # AIPerf's own output count (its OSL) and requests, beside the records' count (the server's, where given)
    osl, requests = blocks.get("output_sequence_length"), blocks.get("request_count")
    if isinstance(osl, dict) and isinstance(osl.get("avg"), int | float):
        pct = {ours: float(osl[ours]) for ours in AIPERF_PERCENTILES if isinstance(osl.get(ours), int | float)}
        note = f"AIPerf's OSL per request: {OSL_NOTE}"
        out["output_tokens"] = Reported(
            Mapping("output_tokens", "output_sequence_length", note), "tokens", float(osl["avg"]), pct, osl.get("count")
        )
    if isinstance(requests, dict) and isinstance(requests.get("avg"), int | float):
        out["requests"] = Reported(Mapping("requests", "request_count", ""), "requests", float(requests["avg"]))
    return out


def _ns(path: Path, line: int, meta: dict[str, Any], key: str) -> int:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, f"line {line}: field metadata.{key}", f"expected integer nanoseconds, got {value!r}")
    return value


def _value(path: Path, line: int, metrics: dict[str, Any], tag: str, want: str, *, many: bool = False) -> Any:
    """A metric's value in seconds (for times) or as a count; None when the record lacks the tag."""
    block = metrics.get(tag)
    if block is None:
        return None
    where = f"line {line}: field metrics.{tag}"
    if not isinstance(block, dict) or "value" not in block:
        raise fail(path, where, f'expected {{"value": ..., "unit": ...}}, got {block!r}')
    scale = 1.0
    if want == "s":
        unit = str(block.get("unit", "ms"))
        if unit not in UNITS:
            raise fail(path, f"{where}.unit", f"unknown time unit {unit!r} (known: {', '.join(UNITS)})")
        scale = UNITS[unit]
    value = block["value"]
    if many:
        if not isinstance(value, list):
            raise fail(path, where, f"expected a list of gaps, got {value!r}")
        return [number(v, path, f"{where}[{i}]") * scale for i, v in enumerate(value)]  # type: ignore[operator]
    return number(value, path, where) * scale  # type: ignore[operator]
