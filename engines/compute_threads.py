"""Where torch's intra-op threads live: in compute threads only, never in the event-loop thread.

GNU OpenMP (torch's and the attention kernel's runtime) keeps one worker pool per thread that has run
a parallel region. Once the pools together hold more threads than there are cores, libgomp stops
letting idle workers spin and puts them to sleep instead, so every small matrix product pays a
futex wake-up. Measured on a 2-core machine: a decode step of the embedded model took 10 ms on the
main thread and 20 ms on an engine thread once the main thread had run one two-thread op; a
[32, 256] x [256, 688] product took 130 us against 360 us.

So the thread that owns the event loop (and loads models) keeps a single intra-op thread, and every
thread that computes (an engine loop, the raw loop) takes the configured count: one pool in all.

The default count is every core this process may run on, with idle OpenMP workers waiting passively
(`OMP_WAIT_POLICY=PASSIVE`, set by the command line before torch loads, unless the user set it or
`GOMP_SPINCOUNT`). libgomp's own default spins a worker for ~300,000 iterations before it sleeps: on a
machine where another process holds a core, the spinning worker and the one doing the work take turns
on the one core left, and `batchmark serve` fell from 822 tok/s (`--threads 1`) to 134. Measured
(docs/threads.md): all cores with passive waiting is the fastest setting both on a shared machine and
with one more core kept busy, and it degrades gracefully where the old default collapsed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_compute_threads: int | None = None


WAIT_POLICY = "PASSIVE"


def wait_passively() -> str | None:
    """Make idle OpenMP workers sleep instead of spin, unless the user chose a wait policy or spin count.

    Only effective before torch (and so libgomp) is loaded: the command line calls it first thing.
    Returns the policy in effect for the manifest (None: libgomp's default)."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
    return os.environ.get("OMP_WAIT_POLICY")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity: a CI runner's cpuset, `taskset`), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """The compute threads' count when `--threads` is not given: every usable core (see the module doc)."""
    return usable_cores()


def configure(threads: int | None = None) -> int:
    """Call on the event-loop thread before any torch work; returns the compute threads' count.

    `threads` None keeps the count already configured, or `default_threads()`.
    """
    global _compute_threads
    import torch

    if _compute_threads is None:
        _compute_threads = default_threads()
    if threads:
        _compute_threads = int(threads)
    torch.set_num_threads(1)
    torch.get_num_threads()  # fixes this thread's count now: a later lazy init would copy a compute thread's
    return _compute_threads


def count() -> int:
    """Intra-op threads a compute thread uses."""
    import torch

    return _compute_threads if _compute_threads is not None else torch.get_num_threads()


def enter_compute_thread() -> None:
    """Call first thing on a thread that runs model steps."""
    if _compute_threads is not None:
        import torch

        torch.set_num_threads(_compute_threads)


def run_in_compute_thread(work: Callable[[], T]) -> T:
    """Run `work` on a fresh compute thread and return its result (or raise its exception)."""
    result: list[T] = []
    failure: list[BaseException] = []

    def body() -> None:
        enter_compute_thread()
        try:
            result.append(work())
        except BaseException as exc:  # re-raised on the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=body, name="batchmark-compute")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
