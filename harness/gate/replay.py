"""Paired replays for gate calibration: many short runs, so no per-run model load, manifest or metrics.

`InProcessReplay` runs the engines of a pair one after the other in this process, as `batchmark run`
does. `ConcurrentReplay` runs the two sides of a pair at the same instant, each in its own worker
process (own interpreter, own GIL, its own core when there are two): whatever else loads a shared
machine then lands on both sides alike instead of on whichever side happened to run during it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError

START_LEAD_S = 0.3  # both workers get the order, then start together this long after it was sent


class InProcessReplay:
    """Replays a workload against engines with the model loaded once, writing only records.jsonl."""

    def __init__(self, model_path: str | None = None, dtype: str = "float32") -> None:
        from engines import compute_threads
        from engines.model.loader import load_model

        compute_threads.configure()  # this thread runs the event loop; the engines' threads compute
        self.loaded = load_model(model_path, dtype=dtype)

    def __call__(self, workload: Any, specs: Sequence[Any], run_dir: Path) -> None:
        self.replay_to(workload, specs, run_dir / "records.jsonl")

    def replay_to(self, workload: Any, specs: Sequence[Any], records_path: Path) -> None:
        from harness.jsonl import JsonlWriter
        from harness.prompts import build_prompts
        from harness.run import GIL_SWITCH_S

        info = {"source": self.loaded.source, "sha256": self.loaded.tokenizer_hash}
        schedule = build_prompts(workload, {"ids"}, self.loaded.tokenizer, info, 0).schedules["ids"]
        switch = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)  # as run_benchmark does: the engine thread must not delay the dispatcher
        try:
            with JsonlWriter(records_path) as records:
                for spec in specs:
                    asyncio.run(self._one(spec, schedule, workload, records))
        finally:
            sys.setswitchinterval(switch)

    async def _one(self, spec: Any, schedule: list[Any], workload: Any, records: Any) -> None:
        from harness.engine_factory import build_engine
        from harness.loadgen import run_closed_loop, run_open_loop

        engine = build_engine(spec, self.loaded)
        await engine.start()
        try:
            sink = lambda record: records.write(record.to_json())  # noqa: E731
            if workload.closed_loop_users:
                await run_closed_loop(engine, schedule, sink, label=spec.label, users=workload.closed_loop_users,
                                      think_time_s=workload.think_time_s)  # fmt: skip
            else:
                await run_open_loop(engine, schedule, sink, label=spec.label)
        finally:
            await engine.stop()


def _worker(conn: Any, model_path: str | None, dtype: str, threads: int | None) -> None:
    try:
        from engines import compute_threads

        compute_threads.configure(threads)
        replay = InProcessReplay(model_path, dtype)
        conn.send("ready")
        while (order := conn.recv()) is not None:
            workload, spec, path, start_at = order
            while time.time() < start_at:
                time.sleep(0.001)
            replay.replay_to(workload, [spec], Path(path))
            conn.send("ok")
    except Exception as exc:  # report to the parent instead of dying silently
        conn.send(f"error: {type(exc).__name__}: {exc}")


class ConcurrentReplay:
    """Both sides of a pair at once, one worker process each; call `close()` when done."""

    def __init__(self, model_path: str | None = None, dtype: str = "float32", threads: int | None = 1) -> None:
        ctx = mp.get_context("spawn")  # a fresh interpreter: no torch threads or locks inherited
        self._conns = []
        self._procs = []
        for _ in range(2):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, model_path, dtype, threads), daemon=True)
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            self._expect(conn, "ready")

    def __call__(self, workload: Any, specs: Sequence[Any], run_dir: Path) -> None:
        if len(specs) != 2:
            raise HarnessInputError(f"concurrent replay runs two engines at once, got {len(specs)}")
        run_dir.mkdir(parents=True, exist_ok=True)
        start_at = time.time() + START_LEAD_S
        parts = [run_dir / f"records-{spec.label}.jsonl" for spec in specs]
        for conn, spec, part in zip(self._conns, specs, parts, strict=True):
            conn.send((workload, spec, str(part), start_at))
        for conn in self._conns:
            self._expect(conn, "ok")
        with (run_dir / "records.jsonl").open("a", encoding="utf-8") as merged:
            for part in parts:
                merged.write(part.read_text(encoding="utf-8"))
                part.unlink()

    @staticmethod
    def _expect(conn: Any, word: str) -> None:
        answer = conn.recv()
        if answer != word:
            raise RuntimeError(f"calibration worker failed: {answer}")

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(BrokenPipeError, OSError):  # a worker that died has nothing to stop
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=10)
