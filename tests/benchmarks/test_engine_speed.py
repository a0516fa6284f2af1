"""Engine speed (`make bench`): continuous batching must not lose to static batching where static wastes nothing.

The P2 shape: 64 requests, 64-token prompts, 64 forced output tokens, 16 users in a closed loop, the
embedded model in fp32 on one compute thread. Every request has the same length, so a static batch
pads nothing and holds no finished member: continuous batching can only tie, and its own per-step
bookkeeping must not make it lose. Targets, on the median of 3 trials (more with
BATCHMARK_BENCH_TRIALS), each trial the median of its ROUNDS pairs of neighbouring runs (a pair is one
run of each engine back to back, in alternating order), so every ratio compares runs seconds apart:
- in process (the harness's closed-loop load generator on `InProcessEngine`, `batchmark run`'s
  engine defaults): continuous >= 0.95x static output tok/s;
- through `batchmark serve --threads 1` (serve's defaults otherwise), one client for both:
  continuous >= 0.95x static.
The raw-loop and mixed-length targets are in test_engines_bench.py.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable

import numpy as np
import pytest

from engines.api import Engine, Request
from engines.http import HttpEngine
from engines.inprocess import InProcessEngine
from engines.options import in_process_options
from harness.loadgen import Scheduled, dispatcher_first, run_closed_loop
from harness.records import RequestRecord
from tests.benchmarks.conftest import ROUNDS, TRIALS
from tests.http.serve_process import ServeProcess

pytestmark = pytest.mark.bench

REQUESTS, PROMPT, OUTPUT, USERS = 64, 64, 64, 16
TARGET_OVER_STATIC = 0.95
KINDS = ("continuous", "static")


def p2_requests(vocab: int, seed: int = 0, count: int = REQUESTS) -> list[Request]:
    rng = np.random.default_rng(seed)
    return [
        Request(f"p{i:03d}", rng.integers(3, vocab, size=PROMPT).tolist(), OUTPUT, ignore_eos=True)
        for i in range(count)
    ]


async def closed_loop(engine: Engine, requests: list[Request]) -> dict[str, float]:
    """Output tok/s and median TTFT / TPOT of one closed-loop run of `requests` with USERS users."""
    records: list[RequestRecord] = []
    await engine.start()
    try:
        outcome = await run_closed_loop(
            engine, [Scheduled(r, 0.0) for r in requests], records.append, label=engine.name, users=USERS
        )
    finally:
        await engine.stop()
    short = [r.request_id for r in records if r.output_tokens != OUTPUT or r.error_type]
    assert not short and len(records) == len(requests), f"{engine.name}: {len(short)} requests fell short"
    ttft = [r.t_first_token - r.t_sent for r in records if r.t_first_token is not None]
    tpot = [(r.token_times[-1] - r.token_times[0]) / (OUTPUT - 1) for r in records]
    return {
        "tok_s": sum(r.output_tokens for r in records) / outcome.wall_time_s,
        "ttft_p50_ms": 1e3 * statistics.median(ttft),
        "tpot_p50_ms": 1e3 * statistics.median(tpot),
    }


def interleaved(run_one: Callable[[str, int], dict[str, float]]) -> list[list[dict[str, dict[str, float]]]]:
    """TRIALS trials of ROUNDS pairs; a pair runs each kind once, the order alternating from pair to pair.

    On this shared machine a run of P2 takes about 2 s, and its speed moves by up to 40% from one run to
    the next (measured: the host's cores, not this VM's processes). A ratio of two neighbours cancels the
    slow drift, and a trial's median pair leaves a burst that hit one run out, where one pair per trial
    let it decide."""
    trials = []
    for trial in range(TRIALS):
        pairs = []
        for pair in range(ROUNDS):
            order = KINDS if (trial * ROUNDS + pair) % 2 == 0 else KINDS[::-1]
            pairs.append({kind: run_one(kind, trial) for kind in order})
        trials.append(pairs)
    return trials


def judge(trials: list[list[dict[str, dict[str, float]]]], where: str, benchmark) -> float:
    per_trial = [statistics.median(p["continuous"]["tok_s"] / p["static"]["tok_s"] for p in pairs) for pairs in trials]
    ratio = statistics.median(per_trial)
    for kind in KINDS:
        runs = [p[kind] for pairs in trials for p in pairs]
        line = ", ".join(f"{key} {statistics.median(r[key] for r in runs):.1f}" for key in runs[0])
        spread = f"{min(r['tok_s'] for r in runs):.0f}-{max(r['tok_s'] for r in runs):.0f}"
        print(f"{where} {kind}: median {line} (tok/s over {len(runs)} runs {spread})")
        benchmark.extra_info[f"{where}_{kind}_tok_s"] = [r["tok_s"] for r in runs]
    pairs = [round(p["continuous"]["tok_s"] / p["static"]["tok_s"], 3) for ps in trials for p in ps]
    print(f"{where}: continuous / static per pair {pairs}")
    print(f"{where}: per trial (median pair) {[round(r, 3) for r in per_trial]}, median {ratio:.3f}")
    benchmark.extra_info[f"{where}_continuous_over_static"] = ratio
    return ratio


def test_equal_lengths_in_process(benchmark, embedded, one_thread):
    requests = p2_requests(int(embedded.model.config.vocab_size))

    def run_one(kind: str, trial: int) -> dict[str, float]:
        with dispatcher_first():  # the GIL switch interval `batchmark run` replays under
            return asyncio.run(closed_loop(InProcessEngine(embedded, in_process_options(kind, {})), requests))

    for kind in KINDS:  # warm-up, not measured: the engine process, the attention kernel, first-call costs
        asyncio.run(closed_loop(InProcessEngine(embedded, in_process_options(kind, {})), requests[:USERS]))
    results: list[list] = []
    benchmark.pedantic(lambda: results.append(interleaved(run_one)), rounds=1, iterations=1)
    assert judge(results[0], "in_process", benchmark) >= TARGET_OVER_STATIC


@pytest.fixture(scope="module")
def p2_servers():
    procs = {kind: ServeProcess("--engine", kind, "--threads", "1", "--served-model-name", "p2") for kind in KINDS}
    try:
        for proc in procs.values():
            proc.wait_ready()
        yield {kind: proc.url for kind, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.stop()


def test_equal_lengths_through_serve(benchmark, embedded, p2_servers):
    requests = p2_requests(int(embedded.model.config.vocab_size))

    def run_one(kind: str, trial: int) -> dict[str, float]:
        return asyncio.run(closed_loop(HttpEngine(p2_servers[kind], "p2", name=kind), requests))

    for kind in KINDS:  # warm-up: the servers' first steps and the client's connections
        asyncio.run(closed_loop(HttpEngine(p2_servers[kind], "p2", name=kind), requests[:USERS]))
    results: list[list] = []
    benchmark.pedantic(lambda: results.append(interleaved(run_one)), rounds=1, iterations=1)
    assert judge(results[0], "serve", benchmark) >= TARGET_OVER_STATIC
