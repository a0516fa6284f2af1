"""`batchmark probe`: does an OpenAI-compatible endpoint batch continuously? A black-box test.

Each round sends `long_requests` long generations, waits until they stream steadily, then sends
`short_requests` short ones and times them. Two models predict the short requests' time to first
token (TTFT), both from the long requests' own measurements:

- continuous batching: a short request joins the running batch at the next step, so its first token
  comes about two steps after it was sent (the step in progress, then its prefill step): 2 x step;
- static batching: it waits for the long batch to finish, then gets a prefill step:
  (long batch's last token - short's send) + step.

A third model, serial service (no batching at all: `--max-num-seqs 1`, a static batch of one), is
told apart first, from what both others share: under any batching two requests stream at the same
time. If in every usable round each request's tokens started only after the previous request's had
ended (stream intervals shrunk by half a step at each end, so timer jitter cannot make an overlap), the
verdict is "serial"; its confidence is the share of request-to-request hand-offs that did not overlap.
Otherwise the short requests' TTFT decides between continuous and static as below (before, a serial
server was called "static" with confidence 1.0: its short requests' first tokens came one after
another, each about a short request's duration after the previous).

The step time is the long requests' token rate before the short ones were sent: for each, the span from its
first to its last token then, over the gaps in it; the median of those. Not the median gap: a server whose
HTTP process falls behind its engine process (vLLM, `batchmark serve` on a busy machine) delivers several
tokens in one read, and the median gap is then 0 while the rate is still the step's.
Each TTFT becomes z = (ttft - continuous) / (static - continuous): 0 fits continuous, 1 fits static.
The verdict is the side of 0.5 the median z is on. Its confidence is Phi(m / s), where m is the
median distance of the z values from 0.5 on the verdict's side and s their robust spread (1.4826 x
MAD, at least 0.05): the chance that one more short request lands on the same side. The result is
"inconclusive" when the long requests leave too little room between the predictions
(`min_separation_steps`), when requests fail, when the confidence is below `min_confidence`, when
completion times contradict the TTFT verdict, or when the short requests waited clearly longer than
even static batching predicts. A continuous server already at its batch limit looks static: keep
long + short requests below the server's batch size.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from engines.api import FinishEvent, Request, TokenEvent

PROMPT_WORD = "probe"


@dataclass(frozen=True)
class ProbeConfig:
    """How the probe loads the endpoint: rounds, long and short requests, their lengths, timeouts."""

    url: str
    model: str | None = None  # None: the first model GET /v1/models lists
    api: str = "completions"
    rounds: int = 3
    long_requests: int = 2
    long_tokens: int = 128
    short_requests: int = 4
    short_tokens: int = 8
    warmup_tokens: int = 8  # long-request tokens seen before the short requests go out
    prompt_words: int = 16
    timeout_s: float = 300.0
    api_key: str | None = field(default=None, repr=False)
    min_separation_steps: float = 6.0
    min_confidence: float = 0.9


@dataclass
class Timeline:
    """When one probe request was sent and when each of its tokens arrived."""

    sent: float
    tokens: list[float] = field(default_factory=list)
    finish: FinishEvent | None = None

    @property
    def error(self) -> str | None:
        if self.finish is None:
            return "no finish event"
        if self.finish.reason == "error":
            return f"{self.finish.error_type}: {self.finish.error_message}"
        return None


@dataclass
class RoundResult:
    """One probe round: the predictions for each batching style and where the short requests landed."""

    step_s: float
    long_left_s: float  # from the short requests' send to the long batch's last token
    continuous_ttft_s: float
    static_ttft_s: float
    short_ttft_s: list[float]
    short_done_s: list[float]
    z_ttft: list[float]
    z_done: list[float]
    problem: str | None = None  # why this round cannot count
    handoffs: int = 0  # consecutive requests (by first token) whose streams did not overlap
    overlaps: int = 0  # consecutive requests whose streams overlapped: some batching


@dataclass
class ProbeResult:
    """The probe's verdict (continuous, static or inconclusive), its confidence and every round."""

    url: str
    model: str
    verdict: str  # continuous | static | serial | inconclusive
    confidence: float
    reason: str
    agreeing: float  # share of short requests on the verdict's side
    median_z_ttft: float | None
    median_z_done: float | None
    rounds: list[RoundResult]
    config: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# -- measurement ----------------------------------------------------------------------------------
async def run_probe(config: ProbeConfig, engine: Any | None = None) -> ProbeResult:
    """Probe `config.url`. `engine` (an HttpEngine) may be given to reuse a client; it is started here."""
    from engines.http import HttpEngine

    check_config(config)
    model = config.model or await discover_model(config.url, config.api_key, config.timeout_s)
    if engine is None:
        engine = HttpEngine(
            config.url,
            model,
            api=config.api,
            timeout_s=config.timeout_s,  # type: ignore[arg-type]
            connections=config.long_requests + config.short_requests + 2,
            api_key=config.api_key,
            prompt_format="text",
        )
    await engine.start()
    rounds: list[RoundResult] = []
    try:
        for r in range(config.rounds):
            rounds.append(await _one_round(engine, config, r))
    finally:
        await engine.stop()
    return decide(config, model, rounds)


async def _one_round(engine: Any, c: ProbeConfig, index: int) -> RoundResult:
    prompt = " ".join([PROMPT_WORD] * c.prompt_words)
    warm = asyncio.Event()
    longs_warm = 0

    def request(kind: str, i: int, tokens: int) -> Request:
        return Request(f"probe-{index}-{kind}{i}", [], tokens, ignore_eos=True, prompt_text=prompt)

    async def drive(req: Request, timeline: Timeline, is_long: bool) -> None:
        nonlocal longs_warm
        counted = False
        async for event in engine.generate(req):
            if type(event) is TokenEvent:
                timeline.tokens.append(event.time)
                if is_long and not counted and len(timeline.tokens) >= c.warmup_tokens:
                    counted = True
                    longs_warm += 1
            elif type(event) is FinishEvent:
                timeline.finish = event
                if is_long and not counted:  # ended (or failed) before warming up: do not wait for it
                    counted = True
                    longs_warm += 1
            if is_long and longs_warm >= c.long_requests:
                warm.set()

    longs = [Timeline(time.perf_counter()) for _ in range(c.long_requests)]
    long_tasks = [asyncio.create_task(drive(request("long", i, c.long_tokens), t, True)) for i, t in enumerate(longs)]
    waiter = asyncio.create_task(warm.wait())
    await asyncio.wait([waiter, *long_tasks], timeout=c.timeout_s, return_when=asyncio.FIRST_COMPLETED)
    while not warm.is_set() and not all(t.done() for t in long_tasks):
        await asyncio.wait([waiter, *long_tasks], timeout=c.timeout_s, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    t_short = time.perf_counter()
    shorts = [Timeline(t_short) for _ in range(c.short_requests)]
    short_tasks = [
        asyncio.create_task(drive(request("short", i, c.short_tokens), t, False)) for i, t in enumerate(shorts)
    ]
    await asyncio.gather(*long_tasks, *short_tasks)
    return measure_round(longs, shorts, t_short, c)


def measure_round(longs: list[Timeline], shorts: list[Timeline], t_short: float, c: ProbeConfig) -> RoundResult:
    """Turn one round's timelines into predictions and normalized positions."""
    failures = [t.error for t in (*longs, *shorts) if t.error]
    rates = [_token_rate([x for x in t.tokens if x <= t_short]) for t in longs]
    if sum(r is not None for r in rates) == 0:  # too few tokens before the short requests: take them all
        rates = [_token_rate(t.tokens) for t in longs]
    known = [r for r in rates if r is not None]
    step = statistics.median(known) if known else 0.0
    long_end = max((t.tokens[-1] for t in longs if t.tokens), default=t_short)
    left = max(0.0, long_end - t_short)
    cont, stat = 2 * step, left + step
    ttft = [t.tokens[0] - t.sent for t in shorts if t.tokens]
    done = [t.tokens[-1] - t.sent for t in shorts if t.tokens]
    more = (c.short_tokens - 1) * step
    span = stat - cont
    z_ttft = [(x - cont) / span for x in ttft] if span > 0 else []
    z_done = [(x - cont - more) / span for x in done] if span > 0 else []
    problem = None
    if failures:
        problem = f"{len(failures)} requests failed: {failures[0]}"
    elif step <= 0 or not ttft:
        problem = "no step time or no short-request tokens measured"
    elif span < c.min_separation_steps * step:
        problem = (
            f"the long requests ended {left * 1e3:.1f} ms after the short ones were sent: fewer than "
            f"{c.min_separation_steps:g} steps between the predictions (raise --long-tokens)"
        )
    handoffs, overlaps = _serial_handoffs([*longs, *shorts], step)
    return RoundResult(step, left, cont, stat, ttft, done, z_ttft, z_done, problem, handoffs, overlaps)


def _token_rate(times: list[float]) -> float | None:
    """Seconds per token over `times` (at least 4 tokens: 3 gaps), or None."""
    if len(times) < 4:
        return None
    return (times[-1] - times[0]) / (len(times) - 1)


def _serial_handoffs(timelines: list[Timeline], step: float) -> tuple[int, int]:
    """(hand-offs, overlaps) between consecutive streams ordered by first token; each stream counts from
    its first to its last token, shrunk by half a step at both ends."""
    spans = sorted((t.tokens[0] + step / 2, t.tokens[-1] - step / 2) for t in timelines if len(t.tokens) >= 2)
    handoffs = overlaps = 0
    end = None
    for start, stop in spans:
        if end is not None:
            if start < end:
                overlaps += 1
            else:
                handoffs += 1
        end = stop if end is None else max(end, stop)
    return handoffs, overlaps


# -- decision -------------------------------------------------------------------------------------
def decide(c: ProbeConfig, model: str, rounds: list[RoundResult]) -> ProbeResult:
    valid = [r for r in rounds if r.problem is None]
    config = {k: v for k, v in asdict(c).items() if k != "api_key"}

    def result(
        verdict: str,
        confidence: float,
        reason: str,
        agreeing: float = 0.0,
        zt: float | None = None,
        zd: float | None = None,
    ) -> ProbeResult:
        return ProbeResult(c.url, model, verdict, confidence, reason, agreeing, zt, zd, rounds, config)

    served = [r for r in rounds if r.problem is None or "failed" not in r.problem]  # timed, if not predicted
    handoffs, overlaps = sum(r.handoffs for r in served), sum(r.overlaps for r in served)
    if served and len(served) * 2 > len(rounds) and handoffs + overlaps:
        share = handoffs / (handoffs + overlaps)
        if share >= c.min_confidence:
            firsts = [sorted(r.short_ttft_s) for r in served]
            gaps = [b - a for f in firsts for a, b in itertools.pairwise(f)]
            apart = f"; the short requests' first tokens came {statistics.median(gaps) * 1e3:.1f} ms apart"
            return result(
                "serial",
                share,
                f"no batching: {handoffs} of {handoffs + overlaps} hand-offs between "
                f"requests without overlap, one stream at a time{apart if gaps else ''}",
                share,
            )
    if len(valid) * 2 <= len(rounds):
        problems = "; ".join(sorted({r.problem for r in rounds if r.problem}))
        return result("inconclusive", 0.0, f"{len(rounds) - len(valid)} of {len(rounds)} rounds unusable: {problems}")
    z = [x for r in valid for x in r.z_ttft]
    zd = [x for r in valid for x in r.z_done]
    median_z, median_zd = statistics.median(z), statistics.median(zd) if zd else None
    verdict = "continuous" if median_z < 0.5 else "static"
    sign = 1.0 if verdict == "continuous" else -1.0
    distances = [sign * (0.5 - x) for x in z]
    m = statistics.median(distances)
    mad = statistics.median(abs(d - m) for d in distances)
    confidence = _phi(m / max(1.4826 * mad, 0.05))
    agreeing = sum(d > 0 for d in distances) / len(distances)
    step_ms = statistics.median(r.step_s for r in valid) * 1e3
    ttft_ms = statistics.median(z_ttft for r in valid for z_ttft in r.short_ttft_s) * 1e3
    cont_ms = statistics.median(r.continuous_ttft_s for r in valid) * 1e3
    stat_ms = statistics.median(r.static_ttft_s for r in valid) * 1e3
    summary = (
        f"short requests' TTFT {ttft_ms:.1f} ms (median of {len(z)}); predicted {cont_ms:.1f} ms if "
        f"continuous, {stat_ms:.1f} ms if static (step {step_ms:.2f} ms)"
    )
    if median_zd is not None and (median_zd < 0.5) != (median_z < 0.5):
        return result(
            "inconclusive", confidence, f"completion times contradict TTFT: {summary}", agreeing, median_z, median_zd
        )
    if median_z > 1.5:
        return result(
            "inconclusive",
            confidence,
            f"short requests waited longer than static batching predicts (queueing or overload?): {summary}",
            agreeing,
            median_z,
            median_zd,
        )
    if confidence < c.min_confidence:
        return result(
            "inconclusive",
            confidence,
            f"confidence below {c.min_confidence:g}: {summary}",
            agreeing,
            median_z,
            median_zd,
        )
    return result(verdict, confidence, summary, agreeing, median_z, median_zd)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


# -- helpers --------------------------------------------------------------------------------------
def check_config(c: ProbeConfig) -> None:
    from harness.errors import HarnessInputError

    for name in ("rounds", "long_requests", "short_requests", "short_tokens", "warmup_tokens", "prompt_words"):
        if getattr(c, name) < 1:
            raise HarnessInputError(f"--{name.replace('_', '-')} {getattr(c, name)}: must be >= 1")
    if c.long_tokens < c.warmup_tokens + 2 * c.min_separation_steps:
        raise HarnessInputError(
            f"--long-tokens {c.long_tokens}: must leave at least {c.min_separation_steps:g} x 2 "
            f"steps after the {c.warmup_tokens} warm-up tokens"
        )
    if c.api not in ("completions", "chat"):
        raise HarnessInputError(f"--api {c.api!r}: expected completions or chat")
    if not c.timeout_s > 0:
        raise HarnessInputError(f"--timeout {c.timeout_s}: must be > 0")


def models_url(url: str) -> str:
    base = url.rstrip("/")
    for suffix in ("/chat/completions", "/completions"):
        base = base.removesuffix(suffix)
    return base + "/models" if base.endswith("/v1") else base + "/v1/models"


async def discover_model(url: str, api_key: str | None, timeout_s: float) -> str:
    import aiohttp

    from harness.errors import HarnessInputError

    target = models_url(url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = aiohttp.ClientTimeout(total=min(timeout_s, 30.0))
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(target, headers=headers) as response:
            status = response.status
            body = await response.json(content_type=None) if status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise HarnessInputError(f"{target}: cannot list models ({type(exc).__name__}: {exc}); pass --model") from None
    if status != 200:
        raise HarnessInputError(f"{target}: HTTP {status}; pass --model")
    try:
        return str(body["data"][0]["id"])
    except (KeyError, IndexError, TypeError):
        raise HarnessInputError(f"{target}: no model listed; pass --model") from None


def format_result(result: ProbeResult) -> str:
    lines = [
        f"probe {result.url}  model {result.model}  api {result.config['api']}  "
        f"long {result.config['long_requests']} x {result.config['long_tokens']} tokens, "
        f"short {result.config['short_requests']} x {result.config['short_tokens']} tokens",
        "round  step ms  long left ms  pred cont ms  pred static ms  short TTFT ms (min/med/max)  z(TTFT)  z(done)",
    ]
    for i, r in enumerate(result.rounds):
        if r.short_ttft_s:
            ttft = "/".join(
                f"{x * 1e3:.1f}" for x in (min(r.short_ttft_s), statistics.median(r.short_ttft_s), max(r.short_ttft_s))
            )
        else:
            ttft = "-"
        zt = f"{statistics.median(r.z_ttft):+.2f}" if r.z_ttft else "-"
        zd = f"{statistics.median(r.z_done):+.2f}" if r.z_done else "-"
        lines.append(
            f"{i:>5}  {r.step_s * 1e3:7.2f}  {r.long_left_s * 1e3:12.1f}  {r.continuous_ttft_s * 1e3:12.1f}  "
            f"{r.static_ttft_s * 1e3:14.1f}  {ttft:>27}  {zt:>7}  {zd:>7}"
            + (f"  unusable: {r.problem}" if r.problem else "")
        )
    if result.verdict == "serial":
        lines.append(
            f"verdict: serial (confidence {result.confidence:.3f}: the share of hand-offs between requests "
            "with no overlap)"
        )
    else:
        lines.append(
            f"verdict: {result.verdict} (confidence {result.confidence:.3f}, {result.agreeing:.0%} of short "
            f"requests on its side)"
        )
    lines.append(f"  {result.reason}")
    return "\n".join(lines)
