"""The engine loop in a child process, as vLLM runs its EngineCore: the load generator never holds its GIL.

In one process, a torch op that returns while the event loop is running Python waits for the GIL, up to
CPython's switch interval. Measured through the load generator, the same engine's steps took up to 48%
longer than when it was stepped directly (docs/engine-speed.md). Here the parent keeps the `Engine`
interface and one reader thread. The child loads the same model (its weight hash is checked), or is forked
from the parent with the model already loaded (`fork_worker`, `batchmark serve`), builds the
scheduler, block manager and runner from the same `EngineOptions` (`engines/engine_parts.py`) and
runs `EngineCore` unchanged. Requests go down one pipe; each step's events and its step record come up
the other. Event times stay the child's `time.perf_counter()`: on Linux that is CLOCK_MONOTONIC, one
clock for every process on the machine, so records mean what they meant in one process.

A worker process loads its model once and then serves one engine after another (a run builds an engine
per trial), so only the first trial pays for starting Python and torch; the model's weights are then held
twice, once in each process. Measured with the loop here: P2's closed loop 5% faster for continuous and 28%
for static batching, and decode steps that cost the same in a closed loop as in an open one (on a thread,
the closed loop's were up to 25% cheaper, which no cost model could tell apart): docs/engine-speed.md,
docs/simulator.md.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from engines.api import EngineEvent, Request, StepSink
from engines.errors import ModelLoadError


@dataclass(frozen=True)
class ModelSource:
    """How a child process loads the parent's model again: `load_model`'s arguments and the hash to expect."""

    path: str | None  # None: the embedded model
    dtype: str
    seed: int
    weight_hash: str  # "" for a worker started before the parent knew it (`prestart`): checked when taken
    threads: int  # the compute threads' count, as `compute_threads.configure` set it in the parent


def model_source(loaded: Any) -> ModelSource:
    """The `ModelSource` of a `LoadedModel`, with this process's compute-thread count."""
    from engines import compute_threads

    embedded = loaded.source == "embedded"
    return ModelSource(
        path=None if embedded else loaded.source,
        dtype=loaded.describe()["dtype"],
        seed=int(loaded.config.get("seed", 0)) if embedded else 0,
        weight_hash=loaded.weight_hash,
        threads=compute_threads.count(),
    )


class EngineProcessError(RuntimeError):
    """The child process could not load the model or build the engine, or it died."""


def portable(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling, else a RuntimeError with its text (a failure must reach the parent)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


# -- the child ----------------------------------------------------------------------------------
def _sender(up: Connection) -> Callable[[tuple], None]:
    lock = threading.Lock()

    def send(message: tuple) -> None:
        # a parent gone (a prestarted worker's parent may exit on bad input while this loads): say nothing;
        # the next read of its pipe ends the loop
        with lock, contextlib.suppress(OSError):
            up.send(message)

    return send


def child_main(down: Connection, up: Connection) -> None:
    """The worker process: load the model once, then build, run and stop engine cores as the parent asks."""
    from engines import compute_threads
    from engines.model.loader import load_model

    send = _sender(up)
    try:
        source: ModelSource = down.recv()
        compute_threads.configure(source.threads)
        loaded = load_model(source.path, dtype=source.dtype, seed=source.seed)
        if source.weight_hash and loaded.weight_hash != source.weight_hash:
            raise ModelLoadError(f"model {loaded.source!r}: the engine process loaded different weights")
    except BaseException as exc:
        send(("failed", portable(exc)))
        return
    send(("ready", loaded.weight_hash))  # a prestarted worker's parent checks it when it takes the worker
    serve_cores(loaded, down, send)


def serve_cores(loaded: Any, down: Connection, send: Callable[[tuple], None]) -> None:
    """Build, run and stop engine cores on `loaded` as the parent asks, until it says exit or is gone."""
    from engines.engine_parts import build_core

    core: Any = None

    def trace(on: bool) -> Any:
        return (lambda record: send(("step", record))) if on else None

    while True:
        try:
            message = down.recv()
        except (EOFError, OSError):  # the parent is gone
            break
        kind = message[0]
        if kind == "start":
            try:
                core = build_core(loaded, message[1])
            except BaseException as exc:
                send(("failed", portable(exc)))
                continue

            def events(batch: list[EngineEvent], running: Any = core) -> None:
                error = None if running.error is None else portable(running.error)
                send(("events", batch, error, running.scheduler.blocks.num_used))

            core.event_sink = events
            core.step_sink = trace(message[2])
            core.start()
            send(("ready", core.runner.attention_backend))
        elif kind == "add":
            core.submit(message[1])
        elif kind == "abort":
            core.abort(message[1])
        elif kind == "trace":
            core.step_sink = trace(message[1])
        elif kind == "reset":
            core.reset_prefix_cache(lambda token=message[1]: send(("reset", token)))
        elif kind == "stop":
            core.stop()
            core.event_sink = lambda batch: None  # `events` holds the core: without this the KV pool
            core = None  # would wait for the cycle collector, and each trial would add one (256 MiB)
            send(("ready", None))
        else:  # "exit"
            break
    if core is not None:
        core.stop()


# -- the parent ---------------------------------------------------------------------------------
class _Worker:
    """One child process holding one loaded model; it serves one `ProcessCore` at a time.

    A plain subprocess, not `multiprocessing.Process`: it needs no `if __name__ == "__main__"` guard in
    the caller's script, and the load generator's own worker processes (daemonic) may start one too."""

    def __init__(self, source: ModelSource, wait: bool = True, loaded: Any = None) -> None:
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        self.process: subprocess.Popen | _Forked
        if loaded is not None:  # a copy of this process, model loaded: nothing to import or load again
            self.process = _Forked.start(loaded, down_read, up_write, (down_write, up_read))
        else:
            self.process = self._spawn(down_read, up_write)
        os.close(down_read)
        os.close(up_write)
        self._down = Connection(down_write, readable=False)
        self._up = Connection(up_read, writable=False)
        self.source = source
        self._send_lock = threading.Lock()
        self.replies: queue.Queue[tuple] = queue.Queue()
        self.owner: ProcessCore | None = None
        threading.Thread(target=self._read, name="batchmark-engine-reader", daemon=True).start()
        if loaded is not None:
            return
        self.send(source)
        if wait:
            self.expect_ready()

    @staticmethod
    def _spawn(down_read: int, up_write: int) -> subprocess.Popen:
        root = str(Path(__file__).resolve().parent.parent)  # where `engines` is, installed or not
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # the parent has shown loading this model once already
        return subprocess.Popen(
            [sys.executable, "-m", "engines.engine_process", str(down_read), str(up_write)],
            pass_fds=(down_read, up_write),
            env=env,
            stdin=subprocess.DEVNULL,
            # Its own session: a terminal's Ctrl-C reaches the parent alone, which drains (serve) or keeps
            # what it measured (run) and then ends the child through its pipe.
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: Any) -> None:
        with self._send_lock:
            self._down.send(message)

    def expect_ready(self) -> Any:
        """Wait for the child's answer to the last control message; raise what it raised."""
        kind, value = self.replies.get()
        if kind != "ready":
            raise value
        return value

    def _read(self) -> None:
        while True:
            try:
                message = self._up.recv()
            except (EOFError, OSError):
                code = self.process.wait()
                died = EngineProcessError(f"the engine process exited (code {code})")
                if self.owner is not None:
                    self.owner.died(died)
                self.replies.put(("failed", died))
                return
            kind = message[0]
            if kind in ("ready", "failed"):
                self.replies.put(message)
            elif self.owner is not None:
                self.owner.receive(message)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a child that died has nothing to stop
            self.send(("exit",))
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Forked:
    """A worker forked from this process after it loaded the model (`fork_worker`), with the part of
    `subprocess.Popen`'s surface a `_Worker` uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    @classmethod
    def start(cls, loaded: Any, down_read: int, up_write: int, parent_ends: tuple[int, int]) -> _Forked:
        sys.stdout.flush()  # what this process printed must not be printed again by the copy
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            return cls(pid)
        code = 0
        try:  # the child: never returns into the parent's code
            os.setsid()  # its own session, as a spawned worker's (`_Worker._spawn` says why)
            for fd in parent_ends:
                os.close(fd)
            serve_cores(loaded, Connection(down_read, writable=False), _sender(Connection(up_write, readable=False)))
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # no atexit handler, no buffer, no finaliser of the parent's runs twice

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: gone, its code unknown
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"engine worker {self.pid}", timeout)  # type: ignore[arg-type]
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


_idle: dict[ModelSource, list[_Worker]] = {}
_starting: list[_Worker] = []  # prestarted, still loading (or loaded and not yet taken); their hash unchecked
_idle_lock = threading.Lock()


def fork_worker(loaded: Any) -> bool:
    """Fork a worker holding `loaded` now, for the first engine start on it (`batchmark serve`): the copy
    imports and loads nothing, where a spawned worker repeats the whole load (about half of serve's start-up,
    docs/measurements/2026-12-05-serve-startup.md). Only from a process with one thread, whose compute ran on
    that thread with one intra-op thread (`compute_threads.configure`): libgomp's worker pool does not survive
    a fork once it exists. False (nothing forked) otherwise; the engine then spawns its worker as before."""
    import torch

    if not hasattr(os, "fork") or threading.active_count() > 1 or torch.get_num_threads() != 1:
        return False
    _release(_Worker(model_source(loaded), loaded=loaded))
    return True


def prestart(path: str | None, dtype: str, threads: int, seed: int = 0) -> None:
    """Start a worker process for this model now, before the caller loads it: the worker's imports and model
    load (about half of `batchmark serve`'s start-up, docs/measurements/2026-12-04-serve-startup.md) then
    overlap the caller's own. The first engine start for the same model takes it and checks its weight hash;
    one never taken exits with the caller (its pipe closes). `threads`: the count `compute_threads.configure`
    will set (configure itself imports torch, which is what this overlaps)."""
    # as `model_source` will name it: a checkpoint by its path as the loader writes it (`str(Path(path))`)
    source = ModelSource(None if path is None else str(Path(path)), dtype, seed, "", threads)
    worker = _Worker(source, wait=False)
    with _idle_lock:
        _starting.append(worker)


def _acquire(source: ModelSource) -> _Worker:
    with _idle_lock:
        workers = _idle.get(source, [])
        while workers:
            worker = workers.pop()
            if worker.alive:
                return worker
        unchecked = replace(source, weight_hash="")
        started = next((w for w in _starting if w.source == unchecked), None)
        if started is not None:
            _starting.remove(started)
    if started is None:
        return _Worker(source)
    weight_hash = started.expect_ready()  # waits for its load; raises what the child raised
    if weight_hash != source.weight_hash:
        started.close()
        raise ModelLoadError(f"model {source.path or 'embedded'!r}: the engine process loaded different weights")
    started.source = source
    return started


def _release(worker: _Worker) -> None:
    with _idle_lock:
        _idle.setdefault(worker.source, []).append(worker)


class ProcessCore:
    """`EngineCore`'s surface (submit, abort, reset_prefix_cache, start, stop, error, the sinks) with the
    loop itself running in a worker process. `start` and `stop` block: call them off the event loop."""

    def __init__(self, source: ModelSource, options: Any) -> None:
        self.source = source
        self.options = options  # EngineOptions
        self.event_sink: Callable[[list[EngineEvent]], None] = lambda events: None
        self._step_sink: StepSink | None = None
        self.error: BaseException | None = None
        self.attention_backend: str | None = None  # the child's runner reports it at start
        self.pid: int | None = None  # the worker process of the last start
        self.kv_blocks_used = 0  # as of the child's last published events
        self._worker: _Worker | None = None
        self._resets: dict[int, Callable[[], None]] = {}
        self._tokens = itertools.count()

    @property
    def step_sink(self) -> StepSink | None:
        return self._step_sink

    @step_sink.setter
    def step_sink(self, sink: StepSink | None) -> None:
        self._step_sink = sink
        if self._worker is not None:
            self._worker.send(("trace", sink is not None))

    def start(self) -> None:
        worker = _acquire(self.source)
        worker.owner = self
        self.error = None
        worker.send(("start", self.options, self._step_sink is not None))
        try:
            self.attention_backend = worker.expect_ready()
        except BaseException:
            worker.owner = None
            _release(worker)
            raise
        self._worker = worker
        self.pid = worker.process.pid

    def stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        if self.error is None:
            worker.send(("stop",))
            worker.expect_ready()
            worker.owner = None
            _release(worker)
        else:
            worker.owner = None
            worker.close()

    def submit(self, request: Request) -> None:
        self._send(("add", request))

    def abort(self, request_id: str) -> None:
        self._send(("abort", request_id))

    def reset_prefix_cache(self, done: Callable[[], None]) -> None:
        token = next(self._tokens)
        self._resets[token] = done
        self._send(("reset", token))

    def _send(self, message: tuple) -> None:
        if self._worker is None:
            raise RuntimeError("engine not started")
        try:
            self._worker.send(message)
        except (OSError, ValueError) as exc:  # the child died: its reader reports that to every request
            self.died(EngineProcessError(f"the engine process is gone: {exc}"))

    # -- from the worker's reader thread ------------------------------------------------------------
    def receive(self, message: tuple) -> None:
        kind = message[0]
        if kind == "events":
            if message[2] is not None:
                self.error = message[2]
            self.kv_blocks_used = message[3]
            self.event_sink(message[1])
        elif kind == "step":
            if self._step_sink is not None:
                self._step_sink(message[1])
        elif kind == "reset":
            self._resets.pop(message[1])()

    def died(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self.event_sink([])


if __name__ == "__main__":  # the worker process: `python -m engines.engine_process DOWN_FD UP_FD`
    from engines.engine_process import child_main as _main  # the importable module's classes, not __main__'s

    _main(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
