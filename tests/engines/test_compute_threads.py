"""Torch's intra-op threads live on compute threads; the event-loop thread keeps one (engines/compute_threads.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch

from engines import compute_threads
from engines.api import Request
from engines.inprocess import EngineOptions, InProcessEngine


@pytest.fixture
def two_compute_threads():
    before = compute_threads.count()
    compute_threads.configure(2)
    yield
    compute_threads.configure(before)


def test_the_calling_thread_keeps_one_and_compute_threads_take_the_count(two_compute_threads):
    assert torch.get_num_threads() == 1
    assert compute_threads.count() == 2
    assert compute_threads.run_in_compute_thread(torch.get_num_threads) == 2
    assert torch.get_num_threads() == 1  # a compute thread's setting does not leak back
    seen: list[int] = []
    plain = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    plain.start()
    plain.join()
    assert torch.get_num_threads() == 1 and seen  # other threads are left alone


def test_run_in_compute_thread_reraises_on_the_caller(two_compute_threads):
    def boom() -> None:
        raise ValueError("from the compute thread")

    with pytest.raises(ValueError, match="from the compute thread"):
        compute_threads.run_in_compute_thread(boom)


def test_the_engine_loop_runs_on_a_compute_thread(embedded, two_compute_threads):
    engine = InProcessEngine(embedded, EngineOptions(kind="continuous"))
    seen: list[int] = []
    execute = engine.runner.execute

    def spy(plan):  # the model step, on the engine's own thread
        seen.append(torch.get_num_threads())
        return execute(plan)

    engine.runner.execute = spy  # type: ignore[method-assign]

    async def one() -> None:
        await engine.start()
        async for _ in engine.generate(Request("r0", [5, 6, 7], 3, ignore_eos=True)):
            pass
        await engine.stop()

    asyncio.run(one())
    assert seen and set(seen) == {2}
    assert engine.describe()["torch_threads"] == 2
    assert torch.get_num_threads() == 1
    asyncio.run(one())  # a stopped engine starts again
    assert len(seen) >= 6
