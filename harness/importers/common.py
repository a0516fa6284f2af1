"""What every importer shares: the imported run, token times rebuilt from chunks, units, bad-input errors.

An importer turns another tool's result file into `ImportedRun`s: batchmark request records when the
file holds per-request data, and always the tool's own aggregates under batchmark's names
(`Reported`), each with the tool's name for it and, where the definitions differ, what differs.
`harness.importers.rundir` writes them as a run directory.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError
from harness.loadgen.scenarios import Scenario
from harness.records import RequestRecord
from workloads.options import MAX_SPAN_S

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
# The percentiles batchmark reports; an importer fills those the tool gives.
PERCENTILES = ("p50", "p90", "p95", "p99", "p99.9")


@dataclass(frozen=True)
class Mapping:
    """One of the tool's metrics in batchmark's dictionary (docs/metrics.md, "Results from other tools")."""

    ours: str  # a batchmark summary name: ttft_sent, tpot, itl, e2e_sent, request_rate, ...
    theirs: str  # the tool's own name, as its file spells it
    note: str = ""  # where the definitions differ; empty when they agree


@dataclass
class Reported:
    """A distribution (or one number) as the tool reported it, converted to seconds (or per second)."""

    mapping: Mapping
    unit: str  # "s", "req/s", "tok/s", "tokens" or "share"
    mean: float | None = None
    percentiles: dict[str, float] = field(default_factory=dict)  # "p50" -> value
    count: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "theirs": self.mapping.theirs,
            "note": self.mapping.note,
            "unit": self.unit,
            "mean": self.mean,
            "percentiles": self.percentiles,
            "count": self.count,
        }


@dataclass
class ImportedRun:
    """One benchmark of the tool's file: one engine label in the run directory."""

    label: str
    records: list[RequestRecord] | None  # None: the file holds aggregates only
    reported: dict[str, Reported] = field(default_factory=dict)  # keyed by our name
    settings: dict[str, Any] = field(default_factory=dict)  # what the tool says it offered (rate, concurrency)
    notes: list[str] = field(default_factory=list)
    scenario: Scenario = field(default_factory=Scenario)  # how the tool offered the load, in batchmark's terms


@dataclass
class Imported:
    tool: str  # "vllm-bench-serve", "guidellm", "aiperf"
    schema: str  # the version of the tool's schema the importer read
    source: Path
    runs: list[ImportedRun]
    notes: list[str] = field(default_factory=list)


def fail(path: Path, where: str, problem: str) -> HarnessInputError:
    """The one-line error for a malformed file: file, line or field, problem."""
    return HarnessInputError(f"{path}: {where}: {problem}")


def text_of(path: Path, holds: str) -> str:
    """The file's text, or the one-line error for one that cannot be read, is not UTF-8 (a binary file) or is empty
    (`holds`: what such a file holds instead)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(path, "file", f"cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        byte = f"byte {exc.start} is {exc.object[exc.start]:#04x}"
        raise fail(path, "file", f"not UTF-8 text ({byte}): a binary file?") from None
    if not text.strip():
        raise fail(path, "file", f"empty: {holds}")
    return text


def in_span(seconds: float, path: Path, where: str) -> float:
    """A rebuilt time, seconds after the file's first request: past ten years (the bound a workload's arrivals
    have) it is a typo or a hostile file, and the run's per-second timelines would not fit in memory."""
    if not 0 <= seconds <= MAX_SPAN_S:
        raise fail(path, where, f"{seconds:.6g} s after the first request: expected 0..{MAX_SPAN_S:.0f} (ten years)")
    return seconds


# Slack for a token time past its request's end: the tools sum float chunk gaps, and AIPerf and GuideLLM stamp
# the end after the last chunk, so a real file's last token lands at or a hair before the end.
END_SLACK_S = 1e-3


def within_request(path: Path, times: list[float], sent: float, finish: float | None, fields: tuple[str, str]) -> None:
    """Refuse token times outside their request (a first token before the send, a token after the end, or past
    ten years): they would make a TTFT longer than the E2E and a negative TPOT, or an inf mean. `fields` names
    the file's fields the first and the last token time came from."""
    if not times:
        return
    first, last = fields
    if times[0] < sent - END_SLACK_S:
        raise fail(path, first, f"the first token {sent - times[0]:.6g} s before the send: expected after it")
    if times[-1] < times[0] - END_SLACK_S:
        raise fail(path, last, f"the last token {times[0] - times[-1]:.6g} s before the first: expected after it")
    in_span(times[0], path, first)
    in_span(times[-1], path, last)
    if finish is not None and times[-1] > finish + END_SLACK_S:
        which, where, t = ("the first", first, times[0]) if times[0] > finish + END_SLACK_S else ("a", last, times[-1])
        raise fail(
            path,
            where,
            f"{which} token {t - sent:.6g} s after the send, past the request's end "
            f"({finish - sent:.6g} s): expected within the request",
        )


def number(value: Any, path: Path, where: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise fail(path, where, f"expected a number, got {value!r}")
    return float(value)


def spread_over_chunks(chunk_times: list[float], tokens: int) -> list[float]:
    """One time per output token, from the arrival times of the streamed chunks that carried them.

    Streaming tools time chunks, not tokens, and one chunk can carry several tokens. The first chunk is
    taken to carry the first token; the other tokens are spread evenly over the remaining chunks (the
    earliest chunks taking the remainder), so tokens that came together get the same time and a gap of
    zero between them: batchmark's ITL then counts what the client saw. With fewer tokens than chunks
    (chunks without content), the last token keeps the last chunk's time.
    """
    c = len(chunk_times)
    if tokens <= 0 or c == 0:
        return []
    if tokens <= c:
        return [*chunk_times[: tokens - 1], chunk_times[-1]] if tokens < c else list(chunk_times)
    if c == 1:
        return [chunk_times[0]] * tokens
    rest = tokens - 1
    base, extra = divmod(rest, c - 1)
    times = [chunk_times[0]]
    for i, t in enumerate(chunk_times[1:]):
        times += [t] * (base + (1 if i < extra else 0))
    return times


def spread_evenly(first: float, last: float, iterations: int, tokens: int) -> list[float]:
    """Token times when only the first and last token and the number of stream iterations are known:
    iterations evenly spaced between them (what GuideLLM itself assumes), tokens spread over them."""
    if tokens <= 0:
        return []
    n = max(1, min(iterations, tokens)) if iterations > 0 else tokens
    if n == 1:
        return spread_over_chunks([last if tokens > 1 else first], tokens)
    step = (last - first) / (n - 1)
    return spread_over_chunks([first + i * step for i in range(n)], tokens)


def record(
    label: str,
    request_id: str,
    *,
    scheduled: float,
    sent: float,
    prompt_tokens: int,
    token_times: list[float],
    finish: float | None,
    error: str | None = None,
    aborted: bool = False,
) -> RequestRecord:
    """A batchmark record for one imported request. The tool did not say what it asked for (max_tokens,
    ignore_eos), so max_tokens is what came back and no length check applies."""
    failed = error is not None or aborted
    return RequestRecord(
        request_id=request_id,
        engine=label,
        tenant="default",
        priority=0,
        max_tokens=len(token_times),
        ignore_eos=False,
        prompt_tokens=prompt_tokens,
        t_scheduled=scheduled,
        t_sent=sent,
        t_first_token=token_times[0] if token_times else None,
        t_finish=finish,
        token_times=token_times,
        output_tokens=len(token_times),
        finish_reason="abort" if aborted else "error" if failed else "stop",
        error_type="cancelled" if aborted else "imported_error" if error is not None else None,
        error_message=(error or "cancelled by the tool").splitlines()[0][:500] if failed else None,
    )


def streamed(
    label: str,
    request_id: str,
    *,
    scheduled: float,
    sent: float,
    prompt_tokens: int,
    ttft: float,
    gaps: list[float],
    tokens: int,
    finish: float | None,
    path: Path,
    fields: tuple[str, str],
) -> tuple[RequestRecord, bool]:
    """A record from a streaming tool's chunk timings (first chunk `ttft` after the send, then `gaps`), and
    whether it streamed more tokens than chunks (its tokens then share their chunks' times). `fields`: the
    file's fields of the TTFT and the gaps, named when a time falls outside the request."""
    chunks = [sent + ttft]
    for gap in gaps:
        chunks.append(chunks[-1] + gap)
    times = spread_over_chunks(chunks, tokens)
    within_request(path, times, sent, finish, fields)
    rec = record(
        label, request_id, scheduled=scheduled, sent=sent, prompt_tokens=prompt_tokens, token_times=times, finish=finish
    )
    return rec, tokens > len(chunks)


def failed(
    label: str,
    request_id: str,
    *,
    scheduled: float,
    sent: float,
    prompt_tokens: int,
    error: str | None,
    aborted: bool = False,
) -> RequestRecord:
    """A record for a request the tool says failed (`error`) or cancelled (`aborted`)."""
    return record(
        label,
        request_id,
        scheduled=scheduled,
        sent=sent,
        prompt_tokens=prompt_tokens,
        token_times=[],
        finish=None,
        error=error,
        aborted=aborted,
    )


def chunk_note(multi: int, n: int) -> list[str]:
    """The note for requests whose chunks carried several tokens (none when every chunk carried one)."""
    if not multi:
        return []
    return [
        f"{multi} of {n} requests streamed more tokens than chunks: their tokens were spread over the chunks "
        "that carried them (the tool's chunk gaps are per chunk, batchmark's ITL per token)"
    ]


def reported_from_ms(mapping: Mapping, stats: dict[str, Any], unit_scale: float = 1e-3) -> Reported | None:
    """A Reported from {"mean": .., "p50": .., "p99": ..} in the tool's unit (default ms) -> seconds."""
    if not stats:
        return None
    scale = unit_scale
    mean = stats.get("mean")
    pct = {k: float(v) * scale for k, v in stats.items() if k in PERCENTILES and isinstance(v, int | float)}
    return Reported(mapping, "s", None if mean is None else float(mean) * scale, pct, stats.get("count"))


@dataclass(frozen=True)
class OutputCount:
    """A request's output tokens as batchmark takes them, beside the tool's own count (AIPerf's OSL,
    inference-perf's output_tokens: both re-tokenize the streamed text)."""

    tokens: int | None  # the server's usage count where the request has it, else the tool's own
    server: bool  # whether `tokens` is the server's count
    osl: int | None  # the tool's own count


@dataclass(frozen=True)
class CountNames:
    """How a tool's file names the output counts, for `count_notes`."""

    server: str  # where the file holds the server's count
    missing: str  # the field a request without a server count lacks
    own: str  # the tool's own count, as a note's subject ("AIPerf's own OSL")
    short: str  # the same, shorter ("AIPerf's OSL")
    how: str  # how the tool counts
    uses: str  # which of the tool's figures count its own count


def count_notes(used: list[OutputCount], names: CountNames) -> list[str]:
    """Which output count the records took, and how far the tool's own count is from the server's."""
    notes, server = [], [c for c in used if c.server]
    if server:
        both = [c for c in server if c.osl is not None]
        differ = sum(1 for c in both if c.osl != c.tokens)
        osl, usage = sum(c.osl or 0 for c in both), sum(c.tokens or 0 for c in both)
        gap = (
            (
                f"{names.own}, {names.how}, reads {osl:,} tokens against the server's {usage:,} "
                f"({differ} of {len(both)} requests differ), and {names.uses}"
            )
            if differ
            else (f"{names.own} agrees with it on every request")
        )
        notes.append(
            f"output tokens: the server's count ({names.server}) for {len(server)} of {len(used)} requests, "
            f"as batchmark counts its own; {gap}"
        )
    own = len(used) - len(server)
    if own:
        notes.append(
            f"output tokens: {names.short} for {own} of {len(used)} requests, which carry no server count "
            f"({names.missing}): {names.how}, a definition difference from batchmark's own count, "
            "the server's usage.completion_tokens"
        )
    return notes


def closed_loop_slots(sends: list[float], latencies: list[float], users: int) -> list[int | None]:
    """The closed loop's user (slot) of each request: in send order, the slot that came free first. The tools
    (vLLM, inference-perf) do not record it; a slot frees when its request ends, so this is the assignment their
    semaphores allowed."""
    free = [(float("-inf"), u) for u in range(users)]
    out: list[int | None] = [None] * len(sends)
    for i in sorted(range(len(sends)), key=sends.__getitem__):
        _, user = heapq.heappop(free)
        out[i] = user
        heapq.heappush(free, (sends[i] + latencies[i], user))
    return out


# Two gaps within a microsecond are the same draw: the files hold unix times near 1.8e9 s as doubles (a resolution
# of about 0.24 us), so one gap subtracted from two pairs of such times can differ by a few tenths of a microsecond.
SAME_GAP_S = 1e-6
# More than half the gaps repeating the one before is no Poisson draw: independent exponential gaps repeat within
# SAME_GAP_S with probability about 2 x rate x SAME_GAP_S (4e-5 at 20 req/s).
REPEATED_SHARE_LIMIT = 0.5


@dataclass(frozen=True)
class ArrivalCheck:
    """What a tool's schedule looks like, gap by gap (`arrival_check`)."""

    gaps: int  # inter-arrival gaps: requests - 1
    distinct: int  # distinct gap values, equal within SAME_GAP_S
    repeated_share: float  # share of the gaps after the first that equal the one before
    note: str | None  # the import note, when the schedule is not what the tool claims

    def settings(self) -> dict[str, Any]:
        """The numbers for the imported run's settings (metrics.json carries them)."""
        return {"gaps": self.gaps, "distinct": self.distinct, "repeated_share": self.repeated_share}


def arrival_check(
    scheduled: Sequence[float], claim: str | None, nominal_rps: float | None, why: str
) -> ArrivalCheck | None:
    """Whether the scheduled send times of a run the tool calls Poisson (`claim`) have independent gaps.

    With the finite times sorted, t_1 <= ... <= t_n, and tol = SAME_GAP_S:
      gaps            g_i = t_(i+1) - t_i, i = 1 .. n - 1
      distinct        the number of values among the g_i, two values one when within tol (sorted, a new value
                      where it exceeds the previous by more than tol)
      repeated_share  r / (n - 2), r = #{i >= 2 : |g_i - g_(i-1)| <= tol}
      run length      (n - 1) / (n - 1 - r): how many times in a row a gap comes, on average
      offered         (n - 1) / (t_n - t_1) req/s (batchmark's `offered_rate_rps`)
    A Poisson process's gaps are independent exponential draws, so a repeat is all but impossible; when the
    tool claims "poisson" and repeated_share > REPEATED_SHARE_LIMIT, `note` says so, with `why` (the tool's
    reason, given by its importer) and the offered rate against `nominal_rps`. None for a run that does not
    claim Poisson (a constant rate repeats its gap by design) or with fewer than 3 times (no two gaps to compare).
    """
    if claim != "poisson":
        return None
    times = sorted(t for t in scheduled if math.isfinite(t))
    n = len(times)
    if n < 3:
        return None
    gaps = [b - a for a, b in itertools.pairwise(times)]
    ordered = sorted(gaps)
    distinct = 1 + sum(1 for a, b in itertools.pairwise(ordered) if b - a > SAME_GAP_S)
    repeats = sum(1 for a, b in itertools.pairwise(gaps) if abs(b - a) <= SAME_GAP_S)
    share = repeats / (n - 2)
    note = None
    if share > REPEATED_SHARE_LIMIT:
        span = times[-1] - times[0]
        offered = f"{(n - 1) / span:.2f} req/s" if span > 0 else "every request at once"
        nominal = f" against the nominal {nominal_rps:g}" if nominal_rps else ""
        note = (
            f"arrivals: {distinct} distinct gaps among {n - 1}, each repeated {(n - 1) / (n - 1 - repeats):.1f} "
            f"times in a row on average: not the independent exponential gaps of a Poisson process ({why}), "
            f"so the load is burstier than its nominal rate and offered {offered}{nominal}"
        )
    return ArrivalCheck(n - 1, distinct, share, note)
