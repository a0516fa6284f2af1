"""Long-lived workers for sharded load generation: one process each (local) or one Ray actor each.

A worker hosts one object (built by a picklable factory) and answers calls on it, one at a time. They
live for the whole run: one actor per request (llmperf's design on Ray) under-provisioned itself
silently, and starting a process costs more than a request. `submit` sends a call and returns at once,
so the same call can go to every worker before any answer is awaited.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections.abc import Callable
from typing import Any, Protocol

from harness.errors import HarnessInputError


class Pending(Protocol):
    def get(self) -> Any: ...


class WorkerHandle(Protocol):
    """One worker: `submit(method, *args)` returns a `Pending` whose `get()` waits for the answer."""

    name: str

    def submit(self, method: str, *args: Any) -> Pending: ...

    def close(self) -> None: ...


class WorkerFailed(RuntimeError):
    """A worker's call raised; the message is the worker's one line."""


def _serve(conn: Any, factory: Callable[[], Any]) -> None:
    try:
        host = factory()
    except Exception as exc:  # tell the parent instead of dying silently
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ok", None))
    while (message := conn.recv()) is not None:
        method, args = message
        try:
            conn.send(("ok", getattr(host, method)(*args)))
        except HarnessInputError as exc:
            conn.send(("input", str(exc)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}".splitlines()[0]))


class _Answer:
    def __init__(self, conn: Any, name: str) -> None:
        self.conn, self.name = conn, name

    def get(self) -> Any:
        status, value = self.conn.recv()
        if status == "input":
            raise HarnessInputError(value)
        if status == "error":
            raise WorkerFailed(f"load-generator worker {self.name}: {value}")
        return value


class ProcessWorker:
    """A worker in its own process on this machine (spawned: a fresh interpreter, its own GIL)."""

    def __init__(self, name: str, factory: Callable[[], Any]) -> None:
        ctx = mp.get_context("spawn")
        self.name = name
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, factory), daemon=True, name=f"batchmark-{name}")
        self._proc.start()

    def ready(self) -> None:
        _Answer(self._conn, self.name).get()

    def submit(self, method: str, *args: Any) -> _Answer:
        self._conn.send((method, args))
        return _Answer(self._conn, self.name)

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):  # a worker that died has nothing to stop
            self._conn.send(None)
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.terminate()


class _ActorHost:
    """What a Ray actor holds: the worker's object, answering calls by method name."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.host = factory()

    def ready(self) -> bool:
        return True

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.host, method)(*args)


class _RayAnswer:
    def __init__(self, ref: Any, name: str) -> None:
        self.ref, self.name = ref, name

    def get(self) -> Any:
        import ray

        try:
            return ray.get(self.ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause()
            if isinstance(cause, HarnessInputError):
                raise HarnessInputError(str(exc.cause)) from None
            raise WorkerFailed(f"load-generator worker {self.name}: {exc.cause}") from None


class ActorWorker:
    """A worker as a Ray actor holding `cpus` CPUs for its whole life."""

    def __init__(self, name: str, factory: Callable[[], Any], cpus: float = 1.0) -> None:
        import ray

        self.name = name
        self._actor = ray.remote(num_cpus=cpus)(_ActorHost).options(name=None).remote(factory)

    def ready(self) -> None:
        _RayAnswer(self._actor.ready.remote(), self.name).get()

    def submit(self, method: str, *args: Any) -> _RayAnswer:
        return _RayAnswer(self._actor.call.remote(method, *args), self.name)

    def close(self) -> None:
        import ray

        ray.kill(self._actor)


def start_workers(kind: str, n: int, factory: Callable[[], Any], cpus: float = 1.0) -> list[Any]:
    """`n` workers of `kind` ("local": processes, "ray": actors), each hosting `factory()`, all ready."""
    workers: list[Any] = []
    try:
        for i in range(n):
            name = f"w{i}"
            workers.append(ActorWorker(name, factory, cpus) if kind == "ray" else ProcessWorker(name, factory))
        for worker in workers:
            worker.ready()
    except BaseException:
        for worker in workers:
            worker.close()
        raise
    return workers
