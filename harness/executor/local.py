"""The default executor: every unit in this process, one after the other, writing straight into its
directory (so records stream to the run directory as they are measured). Needs no Ray."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from harness.executor.node import node_info
from harness.executor.unit import Unit, UnitResult


class LocalExecutor:
    """Runs units in order, in this process."""

    kind = "local"
    slots = 1

    def map(self, units: Sequence[Unit]) -> Iterator[UnitResult]:
        node = node_info()
        for index, unit in enumerate(units):
            started = time.perf_counter()
            value = unit.fn(*unit.args, out_dir=unit.out_dir)
            yield UnitResult(index, value, node, time.perf_counter() - started)

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "nodes": [node_info()]}

    def close(self) -> None:
        pass
