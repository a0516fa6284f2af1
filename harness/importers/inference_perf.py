"""inference-perf's per-request report, `per_request_lifecycle_metrics.json` (`report.request_lifecycle.per_request`).

Schema read: inference-perf 0.7.0, `reportgen/base.py` (`build_per_request_lifecycle_entry`) over
`apis/base.py` (`RequestLifecycleMetric`, `InferenceInfo`, `StreamedResponseMetrics`): a JSON list, one entry per
request of every stage (the preprocessing stage -1 left out; no entry says its stage), each with `start_time` and
`end_time` (the client's `time.perf_counter()` at the dispatch and after the response was read, s), `info` and
`error` (null, or `{error_type, error_msg}`). `info.request_metrics.text.input_tokens` is the prompt (the server's
`usage.prompt_tokens` where it sent one, else the client's tokenization); `info.response_metrics` holds
`chunk_times` (the arrival of every SSE message that carried text: role-only, usage-only and empty-text chunks
are not stamped, `apis/streaming_parser.py`), `server_usage` (the server's `usage`), `output_tokens` (the streamed
text re-tokenized by the client) and `output_token_times`: the chunk times as sent, but rewritten before the
report is written (`correct_streamed_response_metrics`) to one time per re-tokenized token, so it holds as many
times as the client's count, not the server's.

The records: the send is `start_time` and the finish `end_time`, as inference-perf's TTFT and request latency
time them (batchmark's `ttft_sent`, `e2e_sent`); the file records no scheduled time (inference-perf keeps it only for
its schedule-delay summary), so an arrival is its send. Output tokens are the server's count
(`server_usage.completion_tokens`) where the entry has a positive one, as batchmark counts its own runs, spread over
`chunk_times` (`common.spread_over_chunks`); the client's re-tokenized `output_tokens` only where it has not.
The first token is the first chunk with text, the first of `output_token_times` too unless a chunk's text
re-tokenizes to nothing. The load comes from `config.yaml` beside the file (`inference_perf_load`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, RootModel

from harness.importers import inference_perf_load, llmd
from harness.importers.common import (
    CountNames,
    Imported,
    ImportedRun,
    OutputCount,
    chunk_note,
    closed_loop_slots,
    count_notes,
    fail,
    failed,
    in_span,
    record,
    spread_over_chunks,
    text_of,
    within_request,
)
from harness.importers.schema import Clock, Doc, OutputTokens, PromptTokens, check_total_tokens, validated
from harness.importers.yaml_doc import read_yaml

NAME = "per_request_lifecycle_metrics.json"
SCHEMA = "inference-perf per-request lifecycle metrics (per_request_lifecycle_metrics.json, inference-perf 0.7.0)"
COUNTS = CountNames(
    server="server_usage.completion_tokens",
    missing="server_usage.completion_tokens",
    own="inference-perf's own output_tokens",
    short="inference-perf's output_tokens",
    how="the client's re-tokenization of the streamed text",
    uses="its output_token_rate, time_per_output_token and output_token_times count those",
)


class Usage(Doc):
    prompt_tokens: PromptTokens | None = None
    completion_tokens: OutputTokens | None = None


class ResponseMetrics(Doc):
    output_tokens: OutputTokens = 0
    server_usage: Usage | None = None
    chunk_times: list[Clock] = Field(default_factory=list)
    output_token_times: list[Clock] = Field(default_factory=list)


class Text(Doc):
    input_tokens: PromptTokens


class RequestMetrics(Doc):
    text: Text | None = None


class Info(Doc):
    request_metrics: RequestMetrics | None = None
    response_metrics: ResponseMetrics | None = None
    input_tokens: PromptTokens | None = None  # inference-perf's deprecated mirror of request_metrics.text


class Error(Doc):
    error_type: str | None = None
    error_msg: str | None = None


class Entry(Doc):
    """One request of `per_request_lifecycle_metrics.json`."""

    start_time: Clock
    end_time: Clock
    info: Info | None = None
    error: Error | None = None


class Entries(RootModel[list[Entry]]):
    """The whole file: a validation error's path starts at the entry's index (`[3].start_time`)."""


def looks_like(data: Any) -> bool:
    """A list whose first entry has inference-perf's clock pair (an entry with a bad value is still theirs)."""
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], dict)
        and {"start_time", "end_time"} <= set(data[0])
    )


def parse(data: list[Any], path: Path, label: str | None = None) -> Imported:
    label = label or "inference-perf"
    entries = validated(Entries, data, path).root
    counts = [_count(e) for e in entries]
    check_total_tokens(path, "every entry", sum(c.tokens or 0 for c in counts))
    t0 = min(e.start_time for e in entries)
    records, used, multi = [], [], 0
    for i, (e, count) in enumerate(zip(entries, counts, strict=True)):
        at = f"field [{i}]"
        sent = in_span(e.start_time - t0, path, f"{at}.start_time")
        finish = in_span(e.end_time - t0, path, f"{at}.end_time")
        if finish < sent:
            raise fail(path, f"{at}.end_time", f"{sent - finish:.6g} s before start_time: expected after it")
        rid, prompt = f"inference-perf-{i:06d}", _prompt(e.info)
        if e.error is not None:
            message = ": ".join(m for m in (e.error.error_type, e.error.error_msg) if m) or "an error, unnamed"
            records.append(failed(label, rid, scheduled=sent, sent=sent, prompt_tokens=prompt, error=message))
            continue
        response = e.info.response_metrics if e.info else None
        stamps = (response.chunk_times or response.output_token_times) if response else []
        where = "chunk_times" if response and response.chunk_times else "output_token_times"
        if not stamps and (count.tokens or 0) > 0:
            raise fail(
                path,
                f"{at}.info.response_metrics.chunk_times",
                "missing: a non-streamed request has no token times (run inference-perf with api.streaming: true)",
            )
        chunks = [t - t0 for t in stamps]
        times = spread_over_chunks(chunks, count.tokens or 0)
        fields = (f"{at}.info.response_metrics.{where}[0]", f"{at}.info.response_metrics.{where}")
        within_request(path, times, sent, finish, fields)
        records.append(
            record(label, rid, scheduled=sent, sent=sent, prompt_tokens=prompt, token_times=times, finish=finish)
        )
        multi += (count.tokens or 0) > len(chunks)
        used.append(count)
    run = ImportedRun(label, records)
    run.notes.append(
        "inference-perf's per-request file holds no scheduled arrival: each request's arrival is its "
        "send (TTFT = ttft_sent)"
    )
    run.notes += count_notes(used, COUNTS)
    run.notes += chunk_note(multi, len(records))
    _load_and_report(path, run)
    if run.scenario.kind == "closed":  # its users send when they are free: each record's user is the slot it took
        sends = [e.start_time for e in entries]
        users = closed_loop_slots(sends, [e.end_time - e.start_time for e in entries], run.scenario.users)
        for rec, user in zip(records, users, strict=True):
            rec.user = user
    return Imported("inference-perf", SCHEMA, path, [run])


def _load_and_report(path: Path, run: ImportedRun) -> None:
    """The load from config.yaml beside the file, and, for a one-stage run, inference-perf's own figures from its
    stage report beside it (the check of the recomputed means against them)."""
    load = inference_perf_load.beside(path, NAME, None)
    if load is None:
        run.notes.append(f"no config.yaml beside the file, and the file states no load: {inference_perf_load.UNKNOWN}")
        return
    run.scenario, run.settings, run.notes = load.scenario, load.settings, run.notes + load.notes
    run.reported.update(load.reported)
    prefix = path.name[: len(path.name) - len(NAME)]
    report = path.with_name(f"{prefix}inference-perf.partial.stage_0.yaml")
    if load.settings.get("stages") == 1 and report.is_file():
        text = text_of(report, "inference-perf writes the stage's Benchmark Report there")
        br = validated(llmd.Report, read_yaml(report, text), report)
        aggregate = br.results.request_performance.aggregate if br.results.request_performance else None
        run.reported.update(llmd.reported(aggregate) if aggregate else {})
        run.notes.append(f"inference-perf's own aggregates read from {report.name}")


def _count(entry: Entry) -> OutputCount:
    """The server's `completion_tokens` when positive (0 beside streamed text is no count), else the client's."""
    response = entry.info.response_metrics if entry.info else None
    if response is None:
        return OutputCount(0, False, None)
    usage = response.server_usage.completion_tokens if response.server_usage else None
    if usage:
        return OutputCount(usage, True, response.output_tokens)
    return OutputCount(response.output_tokens, False, response.output_tokens)


def _prompt(info: Info | None) -> int:
    if info is None:
        return 0
    if info.request_metrics and info.request_metrics.text:
        return info.request_metrics.text.input_tokens
    usage = info.response_metrics.server_usage if info.response_metrics else None
    return info.input_tokens or (usage.prompt_tokens if usage else None) or 0
