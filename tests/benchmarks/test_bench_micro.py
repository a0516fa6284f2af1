"""Micro-benchmarks (`make bench`): the scheduler step, the block manager and the metric computations.

Targets are relations, not machine-specific figures: a scheduler step costs a small share of the model
step it plans (else continuous batching's per-step bookkeeping would eat what it buys), and the block
manager and the metric code scale linearly with their input.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest

from engines.api import Request
from engines.block_manager import BlockManager
from engines.model_runner import ModelRunner
from engines.policy import make_policy
from engines.scheduler import ContinuousConfig, ContinuousScheduler
from engines.sequence import Sequence
from harness.gate import GateConfig, evaluate, rules_from_texts, sample_from_records
from harness.metrics import records_frame, summarize
from tests.fixtures.gate_runs import synthetic_run

pytestmark = pytest.mark.bench

BATCH = 32
PROMPT = 64
SCHEDULER_SHARE_TARGET = 0.10  # of one decode step of the embedded model at the same batch
LINEAR_SLACK = 2.0  # 4x the input may cost at most 2 x 4 = 8x the time: no quadratic term hides in there


def median_time(fn: Callable[[], object], repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def decoding_batch(blocks: BlockManager) -> ContinuousScheduler:
    """BATCH sequences past their prefill, decoding: the steady state of a busy continuous engine."""
    scheduler = ContinuousScheduler(
        ContinuousConfig(max_running=BATCH, max_batched_tokens=BATCH * PROMPT), make_policy("fcfs"), blocks, eos=None
    )
    for i in range(BATCH):
        request = Request(f"r{i}", list(range(3, 3 + PROMPT)), 100_000, ignore_eos=True)
        scheduler.enqueue(Sequence.from_request(request, i, 0.0))
    plan = scheduler.schedule(0.0)
    scheduler.remove_finished(plan, [5] * BATCH)
    return scheduler


def test_scheduler_step(benchmark, embedded):
    blocks = BlockManager(4096, 16)
    scheduler = decoding_batch(blocks)

    def step() -> None:
        plan = scheduler.schedule(0.0)
        scheduler.remove_finished(plan, [5] * len(plan.chunks))

    benchmark.pedantic(step, rounds=300, iterations=1)
    scheduler_s = median_time(step, 300)
    runner = ModelRunner(embedded.model, blocks.num_blocks, blocks.block_size)
    plan = scheduler.schedule(0.0)
    assert plan.phase == "decode" and len(plan.chunks) == BATCH
    model_s = median_time(lambda: runner.execute(plan))
    benchmark.extra_info.update(scheduler_step_s=scheduler_s, model_step_s=model_s)
    print(f"scheduler step {scheduler_s * 1e6:.0f} us, model decode step {model_s * 1e3:.2f} ms at batch {BATCH}")
    assert scheduler_s < SCHEDULER_SHARE_TARGET * model_s


def allocate_and_free(num_blocks: int) -> Callable[[], None]:
    blocks = BlockManager(num_blocks, 16)
    sequences = [Sequence.from_request(Request(f"s{i}", [3] * 16, 16), i, 0.0) for i in range(num_blocks // 4)]

    def cycle() -> None:
        for seq in sequences:
            blocks.allocate(seq, 4)
        for seq in sequences:
            blocks.free(seq)
        assert blocks.num_free == num_blocks

    return cycle


def test_block_manager(benchmark):
    benchmark(allocate_and_free(4096))
    small, large = median_time(allocate_and_free(1024)), median_time(allocate_and_free(4096))
    benchmark.extra_info.update(cycle_1024_s=small, cycle_4096_s=large)
    assert large < LINEAR_SLACK * 4 * small


def test_metric_computation(benchmark):
    def frames(n: int):
        return records_frame(synthetic_run(1, n=n, rate=50.0))

    small, large = frames(1000), frames(4000)
    benchmark(lambda: summarize(large, seed=0))
    t_small, t_large = median_time(lambda: summarize(small), 3), median_time(lambda: summarize(large), 3)
    benchmark.extra_info.update(summarize_1000_s=t_small, summarize_4000_s=t_large)
    assert t_large < LINEAR_SLACK * 4 * t_small


def test_gate_evaluation(benchmark):
    config = GateConfig(
        rules=rules_from_texts(["ttft.p99 <= +10%", "tpot.p50 <= +5%", "output_tok_s >= -5%", "goodput >= -5%"])
    )

    def pair(n: int):
        return tuple(sample_from_records(synthetic_run(seed, n=n, rate=50.0)) for seed in (1, 2))

    small, large = pair(1000), pair(4000)
    verdict = benchmark(lambda: evaluate(config, *large))
    assert verdict.pairing["paired"]
    t_small = median_time(lambda: evaluate(config, *small), 3)
    t_large = median_time(lambda: evaluate(config, *large), 3)
    benchmark.extra_info.update(gate_1000_s=t_small, gate_4000_s=t_large)
    assert t_large < LINEAR_SLACK * 4 * t_small
