"""The garbage collector paused: where it can only cost time and can find nothing to free."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused(collect_first: bool = False) -> Iterator[None]:
    """No automatic collection inside the block (restored after). `collect_first`: a full collection
    before it, so what was garbage goes now rather than at some later moment (a timed run's start)."""
    enabled = gc.isenabled()
    if collect_first:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
