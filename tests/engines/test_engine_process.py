"""The engine loop in its own process: the same tokens and step trace as on a thread, one worker reused
across engines, and a dead child answered with a failure for every request instead of a hang."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import time
from pathlib import Path

import pytest

from engines import engine_process
from engines.api import FinishEvent, Request, TokenEvent
from engines.errors import ModelLoadError
from engines.inprocess import EngineOptions, InProcessEngine
from engines.scheduler import ContinuousConfig
from tests.engines.helpers import mixed_requests, run_engine

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)


@pytest.mark.parametrize("kind", ["continuous", "static"])
def test_a_process_engine_computes_what_the_thread_engine_computes(embedded, kind):
    # 6 requests: more than the 4 running slots (some wait for a slot), prompts longer than a step's 64 tokens
    # (chunked prefill), outputs of 5 to 19 tokens (requests finish and are admitted mid-decode)
    requests = mixed_requests(6, seed=3, vocab=embedded.vocab_size)
    options = EngineOptions(kind=kind, continuous=ContinuousConfig(max_running=4, max_batched_tokens=64))  # type: ignore[arg-type]
    on_thread = run_engine(embedded, options, requests)
    in_process = run_engine(embedded, dataclasses.replace(options, engine_process=True), requests)
    assert in_process.tokens_by_request == on_thread.tokens_by_request
    # Steps may group differently (requests reach the loop through a pipe, a few at a time), but the trace
    # must account for the same work: every prompt and output token computed once, every request admitted
    # and finished once, and the times on the parent's clock.
    for run in (on_thread, in_process):
        assert sum(step["tokens_computed"] for step in run.steps) == sum(
            len(r.prompt_token_ids) + r.max_tokens - 1 for r in requests
        )
        assert sorted(rid for step in run.steps for rid in step["finished"]) == sorted(r.request_id for r in requests)
        assert sorted(rid for step in run.steps for rid in step["admitted"]) == sorted(r.request_id for r in requests)
    assert all(0 < step["t_start"] <= step["t_end"] <= time.perf_counter() for step in in_process.steps)


def test_one_worker_serves_engine_after_engine_and_reports_its_loop(embedded):
    options = EngineOptions(engine_process=True)
    pids = []
    for _ in range(2):
        engine = InProcessEngine(embedded, options)
        run = run_engine_keep(engine, [Request("a", [5, 6, 7, 8], 3)])
        assert run == [3]
        pids.append(engine.core.pid)
        described = engine.describe()
        assert described["engine_loop"] == "process"
        assert described["attention"] in ("native paged kernel", "torch gather + sdpa")
    assert pids[0] == pids[1] and pids[0] != os.getpid()


def run_engine_keep(engine: InProcessEngine, requests: list[Request]) -> list[int]:
    async def go() -> list[int]:
        await engine.start()
        try:
            counts = []
            for request in requests:
                events = [e async for e in engine.generate(request)]
                assert isinstance(events[-1], FinishEvent) and events[-1].error_type is None
                counts.append(sum(isinstance(e, TokenEvent) for e in events))
            return counts
        finally:
            await engine.stop()

    return asyncio.run(asyncio.wait_for(go(), 60))


def test_abort_and_prefix_cache_reset_reach_the_child(embedded):
    engine = InProcessEngine(embedded, EngineOptions(engine_process=True))

    async def go() -> tuple[FinishEvent, int]:
        await engine.start()
        try:
            stream = engine.generate(Request("long", list(range(10, 40)), 2000, ignore_eos=True))
            tokens = 0
            async for event in stream:
                if isinstance(event, TokenEvent):
                    tokens += 1
                    if tokens == 3:
                        await engine.abort("long")
                elif isinstance(event, FinishEvent):
                    await engine.reset_prefix_cache()  # answered by the child's loop, or this would hang
                    return event, tokens
            raise AssertionError("no finish event")
        finally:
            await engine.stop()

    finish, tokens = asyncio.run(asyncio.wait_for(go(), 60))
    assert finish.reason == "abort" and 3 <= tokens < 2000


def test_a_child_that_loads_other_weights_is_refused(embedded):
    other = dataclasses.replace(embedded, weight_hash="0" * 64)
    engine = InProcessEngine(other, EngineOptions(engine_process=True))
    with pytest.raises(ModelLoadError, match="different weights"):
        asyncio.run(asyncio.wait_for(engine.start(), 60))


def child_rss_mib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS"))
    return int(line.split()[1]) // 1024


@pytest.mark.parametrize("engine_process", [False, True])
def test_a_stopped_engine_frees_its_kv_pool_at_once(embedded, engine_process):
    # A run builds an engine per trial. The engine's event sink held the core that held the engine: each
    # trial's KV pool (256 MiB) waited for the cycle collector, and a 24-trial calibration grew by gigabytes.
    import gc
    import weakref

    gc.collect()
    gc.disable()
    try:
        sizes = []
        for _ in range(3):
            engine = InProcessEngine(embedded, EngineOptions(engine_process=engine_process))
            assert run_engine_keep(engine, [Request("a", [5, 6, 7], 3)]) == [3]
            if engine_process:
                sizes.append(child_rss_mib(engine.core.pid))
            else:
                runner = weakref.ref(engine.runner)
                del engine
                assert runner() is None  # freed by reference counting, no collector needed
    finally:
        gc.enable()
    if engine_process:
        assert sizes[-1] - sizes[0] < 128, sizes  # the same worker, the same footprint trial after trial


# After the tests that reuse the shared worker: killing it makes the next engine spawn a new one, which
# imports torch and loads the model again (about 6 s).
def test_a_killed_engine_process_fails_every_request_in_one_line(embedded):
    engine = InProcessEngine(embedded, EngineOptions(engine_process=True))

    async def go() -> list[FinishEvent]:
        await engine.start()
        try:
            streams = [engine.generate(Request(f"r{i}", list(range(10, 30)), 5000, ignore_eos=True)) for i in range(3)]
            first = await anext(streams[0])
            assert first is not None
            os.kill(engine.core.pid, signal.SIGKILL)  # as the kernel's OOM killer would
            finishes = []
            for stream in streams:
                async for event in stream:
                    if isinstance(event, FinishEvent):
                        finishes.append(event)
            return finishes
        finally:
            await engine.stop()

    finishes = asyncio.run(asyncio.wait_for(go(), 60))
    assert [f.error_type for f in finishes] == ["engine_failure"] * 3
    assert finishes[0].error_message.startswith("engine loop failed: EngineProcessError: the engine process exited")
    assert "\n" not in finishes[0].error_message
    assert engine.failure is not None


def test_a_loop_that_fails_in_the_child_is_reported_and_its_worker_closed(embedded):
    import threading

    from engines.engine_process import ProcessCore, model_source

    # A compute-thread count torch refuses fails the loop itself, in the child, after its start was answered.
    source = dataclasses.replace(model_source(embedded), threads=-1)
    core = ProcessCore(source, EngineOptions(engine_process=True))
    failed = threading.Event()
    core.event_sink = lambda events: failed.set() if core.error is not None else None
    core.start()
    try:
        assert failed.wait(60)
        assert "set_num_threads" in str(core.error)
        core.submit(Request("late", [5, 6, 7], 4))  # sent before the parent looked: the child must not choke
        pid = core.pid
    finally:
        core.stop()  # a failed loop's worker is closed, not reused
    assert pid is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no engine process left behind


class _Prestarted:
    """A prestarted worker as `_acquire` sees it: loaded (or failed), its weight hash not yet checked."""

    def __init__(self, source: engine_process.ModelSource, weight_hash: str) -> None:
        self.source, self.weight_hash, self.closed = source, weight_hash, False

    def expect_ready(self) -> str:
        return self.weight_hash

    def close(self) -> None:
        self.closed = True


def test_a_prestarted_worker_is_taken_once_its_weights_match(monkeypatch: pytest.MonkeyPatch) -> None:
    # serve starts the worker before it loads the model itself (issue 32: start-up halved); the first engine
    # for the same model, dtype and threads takes it, and only when its weights hash to the parent's
    unchecked = engine_process.ModelSource(None, "float32", 0, "", 2)
    wanted = dataclasses.replace(unchecked, weight_hash="a" * 64)
    good, other = _Prestarted(unchecked, "a" * 64), _Prestarted(unchecked, "b" * 64)
    monkeypatch.setattr(engine_process, "_starting", [good])
    assert engine_process._acquire(wanted) is good and good.source == wanted and not engine_process._starting
    monkeypatch.setattr(engine_process, "_starting", [other])
    with pytest.raises(ModelLoadError, match="different weights"):
        engine_process._acquire(wanted)
    assert other.closed and not engine_process._starting
    spawned: list[engine_process.ModelSource] = []
    monkeypatch.setattr(engine_process, "_Worker", lambda source: spawned.append(source) or "fresh")
    monkeypatch.setattr(engine_process, "_starting", [_Prestarted(dataclasses.replace(unchecked, threads=1), "")])
    assert engine_process._acquire(wanted) == "fresh" and spawned == [wanted]  # another thread count: not taken


def test_engine_options_are_read_without_torch() -> None:
    # what lets serve start the worker before its own imports: reading the options must not load torch
    import subprocess
    import sys

    code = (
        "import sys; from engines.options import in_process_options; "
        "in_process_options('continuous', {}, profile='serve'); assert 'torch' not in sys.modules"
    )
    root = Path(__file__).resolve().parents[2]
    assert (
        subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)}).returncode
        == 0
    )


def test_a_forked_worker_is_waited_for_and_killed_like_a_spawned_one() -> None:
    """`_Forked` answers `_Worker`'s calls as `subprocess.Popen` does: the exit code, a timeout, a kill."""
    import subprocess

    pid = os.fork()
    if pid == 0:
        os._exit(3)
    assert engine_process._Forked(pid).wait(timeout=10) == 3
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    sleeper = engine_process._Forked(pid)
    with pytest.raises(subprocess.TimeoutExpired):
        sleeper.wait(timeout=0.1)
    assert sleeper.poll() is None
    sleeper.kill()
    assert sleeper.wait(timeout=10) == -signal.SIGKILL


def test_no_fork_from_a_process_running_other_threads() -> None:
    """A thread might hold a lock or an OpenMP pool the copy would inherit broken: the worker is spawned."""
    import threading

    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    idle = sum(map(len, engine_process._idle.values()))
    try:
        assert engine_process.fork_worker(None) is False
        assert sum(map(len, engine_process._idle.values())) == idle  # nothing forked, nothing waiting to be taken
    finally:
        release.set()
        other.join()
