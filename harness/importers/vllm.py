"""`vllm bench serve --save-result` JSON: aggregates always, per-request data with `--save-detailed`.

Schema read: vLLM's `vllm/benchmarks/serve.py` (the `vllm bench serve` of vLLM 0.10 to 0.11,
0.32.0 (files it wrote here: tests/importers/fixtures/vllm-0.32.0-cpu) and main in 2026; checked against
commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1, `result_json` in `main_async`):
top-level `duration`, `completed`, `failed`, `request_throughput`, `output_throughput`,
`total_token_throughput`, `request_goodput`, `mean_/median_/std_/pNN_{ttft,tpot,itl,e2el}_ms`, and
`request_rate` (a number, or "inf"), `burstiness`, `max_concurrency`, `model_id`, `date`. With
`--save-detailed`, one list entry per request: `start_times` (the client's perf_counter at the send, s),
`ttfts` (s), `itls` (every gap between streamed chunks, s), `latencies` (s), `input_lens`, `output_lens`,
`errors` ("" when it succeeded) and `queue_times` (s from the request's arrival to its send: the wait for
the client's semaphore where concurrency was capped).

vLLM times TTFT and E2E from the send, so they are batchmark's `ttft_sent` and `e2e_sent`; with
`queue_times` the scheduled arrival is the send minus that wait, and batchmark's `ttft` (from the
arrival) includes it. vLLM's ITL is per chunk; the records spread a chunk's tokens over it
(`harness.importers.common.spread_over_chunks`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, RootModel

from harness.importers.common import (
    PERCENTILES,
    Imported,
    ImportedRun,
    Mapping,
    Reported,
    chunk_note,
    closed_loop_slots,
    fail,
    failed,
    in_span,
    streamed,
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

SCHEMA = "vllm bench serve result JSON (vllm/benchmarks/serve.py, vLLM 0.10-0.11, 0.32.0 and 2026 main)"
DETAILED = ("start_times", "ttfts", "itls", "latencies", "input_lens", "output_lens")

DISTRIBUTIONS = (
    Mapping("ttft_sent", "ttft", "from the send (POST) to the first chunk with content: batchmark's ttft_sent"),
    Mapping("tpot", "tpot", ""),
    Mapping(
        "itl",
        "itl",
        "every gap between streamed chunks, pooled; a chunk may carry several tokens, so it "
        "equals batchmark's per-token ITL only when every chunk carries one",
    ),
    Mapping("e2e_sent", "e2el", "from the send to the last chunk: batchmark's e2e_sent"),
)
RATES = (
    (
        "request_rate",
        "request_throughput",
        "req/s",
        "completed requests / benchmark duration (first send to last "
        "completion): batchmark's whole-run rate, not its steady one",
    ),
    ("output_token_rate", "output_throughput", "tok/s", "output tokens / benchmark duration: whole-run"),
    ("total_token_rate", "total_token_throughput", "tok/s", "(prompt + output) tokens / benchmark duration"),
    (
        "goodput",
        "request_goodput",
        "req/s",
        "requests meeting every --goodput limit / benchmark duration; "
        "batchmark counts SLO-meeting finishes in the steady window",
    ),
)


class VllmResult(Doc):
    """The result JSON as `vllm bench serve` writes it (vllm/benchmarks/serve.py, `result_json` in `main_async`,
    vLLM commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1): the per-request lists with --save-detailed, and
    `mean_/median_/std_/pNN_<metric>_ms` statistics (checked by `_check_statistics`, their names vary)."""

    duration: Seconds | None = None
    completed: Count | None = None
    failed: Count | None = None
    num_prompts: Count | None = None
    # vLLM writes an unlimited rate as the string "inf" (an older writer's Infinity reads as float inf)
    request_rate: Annotated[float, Field(strict=True, gt=0)] | Literal["inf"] | None = None
    burstiness: Positive | None = None
    max_concurrency: Users | None = None
    request_throughput: Seconds | None = None
    request_goodput: Seconds | None = None
    output_throughput: Seconds | None = None
    total_token_throughput: Seconds | None = None
    ttfts: list[Seconds] | None = None
    itls: list[list[Seconds]] | None = None
    start_times: list[Clock] | None = None  # the client's perf_counter at each send
    latencies: list[Seconds] | None = None
    queue_times: list[Seconds] | None = None
    input_lens: list[PromptTokens] | None = None
    output_lens: list[OutputTokens] | None = None
    errors: list[str | None] | None = None


STATISTIC = re.compile(r"(mean|median|std|p\d+(\.\d+)?)_[a-z0-9_]+_ms")


def looks_like(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    return "ttfts" in data or "mean_ttft_ms" in data or isinstance(data.get("request_throughput"), int | float)


def parse(data: dict[str, Any], path: Path, label: str | None = None) -> Imported:
    validated(VllmResult, data, path)
    _check_statistics(data, path)
    check_total_tokens(path, "field output_lens", sum(data.get("output_lens") or []))
    label = label or "vllm-bench"
    scenario, why = scenario_of(data)
    run = ImportedRun(label, None, settings=_settings(data), scenario=scenario)
    run.notes += [why] if why else []
    run.reported = _reported(data)
    if all(key in data for key in DETAILED):
        run.records = _records(data, path, label, run.notes, scenario)
    else:
        missing = [k for k in DETAILED if k not in data]
        run.notes.append(
            f"no per-request data ({', '.join(missing)} missing: run vllm bench serve with "
            "--save-detailed for them); only vLLM's own aggregates are shown"
        )
    return Imported("vllm-bench-serve", SCHEMA, path, [run])


def scenario_of(data: dict[str, Any]) -> tuple[Scenario, str]:
    """How vLLM offered its requests, as batchmark's scenario (harness.loadgen.scenarios), and why.

    `--max-concurrency N` with `--request-rate inf` is a closed loop of N users: every request "arrives" at
    the start and waits for a free slot of the client's semaphore by design, so that wait (vLLM's
    `client_queue_time`) is not schedule lag; the arrival is the send, as in batchmark's own closed loop.
    `--request-rate inf` without a cap offers every request at once: batchmark's offline scenario. A finite
    rate is an open loop on vLLM's schedule, capped or not: there a wait for a slot did delay a request past
    its scheduled arrival (vLLM's own `e2el_including_client_queue` counts it), and is lag.
    """
    cap, rate = data.get("max_concurrency"), data.get("request_rate")
    rate = "inf" if rate == float("inf") else rate
    if rate == "inf" and cap:
        return Scenario("closed", users=int(cap)), (
            f"--max-concurrency {cap} --request-rate inf: imported as a closed loop of {cap} users; a request's "
            "wait for a free slot (vLLM's client_queue_time) is by design, not schedule lag: its arrival is its "
            "send, and the steady window runs over the sends, as for batchmark's own closed loop"
        )
    if rate == "inf":
        return Scenario("offline"), (
            "--request-rate inf: imported as batchmark's offline scenario (every request due at the start): "
            "no steady window, the whole-run rate is the throughput"
        )
    if cap:
        return Scenario("open"), (
            f"--max-concurrency {cap} at {rate:g} req/s: an open loop on vLLM's schedule; a request that waited "
            "for a free slot was sent after its arrival, and that wait (vLLM's client_queue_time) counts as lag"
        )
    return Scenario("open"), ""


def _check_statistics(data: dict[str, Any], path: Path) -> None:
    """Every `mean_ttft_ms`, `p99_e2el_ms`, ... a non-negative number of ms (or null: a metric not measured)."""
    validated(_Statistics, {k: v for k, v in data.items() if STATISTIC.fullmatch(k)}, path)


class _Statistics(RootModel[dict[str, Seconds | None]]):
    pass


def _settings(data: dict[str, Any]) -> dict[str, Any]:
    keys = ("request_rate", "burstiness", "max_concurrency", "model_id", "backend", "num_prompts", "date", "duration")
    return {k: data[k] for k in keys if k in data}


def _reported(data: dict[str, Any]) -> dict[str, Reported]:
    out: dict[str, Reported] = {}
    for m in DISTRIBUTIONS:
        mean = data.get(f"mean_{m.theirs}_ms")
        pct: dict[str, float] = {}
        for label in PERCENTILES:
            value = data.get(f"{label}_{m.theirs}_ms")
            if isinstance(value, int | float):
                pct[label] = float(value) / 1e3
        if not pct and isinstance(data.get(f"median_{m.theirs}_ms"), int | float):
            pct["p50"] = float(data[f"median_{m.theirs}_ms"]) / 1e3
        if mean is not None or pct:
            out[m.ours] = Reported(m, "s", None if mean is None else float(mean) / 1e3, pct, data.get("completed"))
    for ours, theirs, unit, note in RATES:
        if isinstance(data.get(theirs), int | float):
            out[ours] = Reported(Mapping(ours, theirs, note), unit, float(data[theirs]))
    return out


def _records(data: dict[str, Any], path: Path, label: str, notes: list[str], scenario: Scenario) -> list[Any]:
    n = len(data["ttfts"])
    lists = {k: data[k] for k in (*DETAILED, "errors", "queue_times") if k in data}
    for key, values in lists.items():
        if not isinstance(values, list) or len(values) != n:
            size = len(values) if isinstance(values, list) else type(values).__name__
            raise fail(path, f"field {key}", f"expected a list of {n} entries (one per request, as ttfts), got {size}")
    errors = lists.get("errors") or [""] * n
    queue = list(lists.get("queue_times") or [0.0] * n)
    starts = list(data["start_times"])
    t0 = min((s - q for s, q in zip(starts, queue, strict=True)), default=0.0)
    sends = [in_span(s - t0, path, f"field start_times[{i}]") for i, s in enumerate(starts)]
    for i, (send, latency) in enumerate(zip(sends, data["latencies"], strict=True)):
        in_span(send + latency, path, f"field latencies[{i}]")
    if scenario.kind == "closed":  # the arrival is the send: the slot's wait is the loop's, not lag
        arrivals = sends
    elif scenario.kind == "offline":  # every request due at the start
        arrivals = [0.0] * n
    else:
        arrivals = [s - q for s, q in zip(sends, queue, strict=True)]
    users = closed_loop_slots(sends, data["latencies"], scenario.users) if scenario.kind == "closed" else [None] * n
    records, multi = [], 0
    for i in range(n):
        rid, prompt = f"vllm-{i:06d}", data["input_lens"][i]
        if errors[i]:
            rec = failed(label, rid, scheduled=arrivals[i], sent=sends[i], prompt_tokens=prompt, error=str(errors[i]))
        else:
            rec, many = streamed(
                label,
                rid,
                scheduled=arrivals[i],
                sent=sends[i],
                prompt_tokens=prompt,
                ttft=data["ttfts"][i],
                gaps=data["itls"][i],
                tokens=data["output_lens"][i],
                finish=sends[i] + data["latencies"][i],
                path=path,
                fields=(f"field ttfts[{i}]", f"field itls[{i}]"),
            )
            multi += many
        rec.user = users[i]
        records.append(rec)
    notes += chunk_note(multi, n)
    if "queue_times" not in data and scenario.kind == "open":
        notes.append("no queue_times: each request's arrival is taken to be its send (TTFT = ttft_sent)")
    return records
