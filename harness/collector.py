"""The garbage collector paused where it can only cost time and can find nothing to free, and full
collections that scan only what is new.

A full collection scans every tracked object: with torch, pandas and scipy imported and the model loaded,
about 240,000 of them, 200-300 ms on a 2-core machine, nearly all modules, functions and weights that live
as long as the process. Inside `survivors_frozen` (a run, a sweep) each `full_collection` moves what
survived it into the collector's permanent generation (`gc.freeze`), so the next one scans only what was
allocated since, in about a millisecond, and frees the unreachable cycles among it. A cycle that runs through
a frozen object waits: on leaving, the frozen objects go back to the collector (`gc.unfreeze`), and a later
collection frees it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0  # how many `survivors_frozen` blocks are open; the outermost unfreezes
_freezing = False  # whether the open blocks freeze (False where the caller had frozen objects of its own)


@contextlib.contextmanager
def survivors_frozen() -> Iterator[None]:
    """Inside (nestable): `full_collection` freezes what survives it. Leaving the outermost block unfreezes
    all. A process that had frozen objects itself (a pre-fork server) keeps its own freeze: nothing here
    freezes or unfreezes then."""
    global _depth, _freezing
    with _lock:
        if _depth == 0:
            _freezing = gc.get_freeze_count() == 0
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _freezing:
                _freezing = False
                gc.unfreeze()


def full_collection() -> None:
    """`gc.collect()`: every unreachable cycle among the objects the collector scans is freed. Inside
    `survivors_frozen`, the survivors are then frozen, and the next call scans only what is newer."""
    gc.collect()
    if _freezing:
        gc.freeze()


@contextlib.contextmanager
def collector_paused(collect_first: bool = False) -> Iterator[None]:
    """No automatic collection inside the block (restored after). `collect_first`: a full collection
    before it, so what was garbage goes now rather than at some later moment (a timed run's start)."""
    enabled = gc.isenabled()
    if collect_first:
        full_collection()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
