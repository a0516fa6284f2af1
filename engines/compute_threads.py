"""Where torch's intra-op threads live: in compute threads only, never in the event-loop thread.

GNU OpenMP (torch's and the attention kernel's runtime) keeps one worker pool per thread that has run
a parallel region. Once the pools together hold more threads than there are cores, libgomp stops
letting idle workers spin and puts them to sleep instead, so every small matrix product pays a
futex wake-up. Measured on a 2-core machine: a decode step of the embedded model took 10 ms on the
main thread and 20 ms on an engine thread once the main thread had run one two-thread op; a
[32, 256] x [256, 688] product took 130 us against 360 us.

So the thread that owns the event loop (and loads models) keeps a single intra-op thread, and every
thread that computes (an engine loop, the raw loop) takes the configured count: one pool in all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_compute_threads: int | None = None


def configure(threads: int | None = None) -> int:
    """Call on the event-loop thread before any torch work; returns the compute threads' count.

    `threads` None keeps the count already configured, or torch's default (one per core).
    """
    global _compute_threads
    import torch

    if _compute_threads is None:
        _compute_threads = torch.get_num_threads()
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
