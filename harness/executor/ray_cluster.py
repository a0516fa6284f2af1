"""Units on a Ray cluster: each unit a Ray task with the CPUs it declared; units with one pair key pinned
to one node (node-affinity scheduling), pair keys spread over the nodes that fit them.

A unit writes into a scratch directory on its node; its files travel back with its value and land in the
unit's directory here, so a run directory looks the same whichever executor made it. The price: a unit
still running when the driver dies is lost (on the local executor records stream to disk as they finish).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.executor.node import node_info
from harness.executor.unit import Unit, UnitResult

# what every Ray worker process needs in its environment (a node's own shell may not have it)
WORKER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run_unit(fn: Any, args: tuple[Any, ...], wants_dir: bool) -> tuple[Any, dict[str, bytes], dict[str, Any], float]:
    """On the node: run the unit into a scratch directory and hand back its value and files."""
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="batchmark-unit-")) if wants_dir else None
    try:
        value = fn(*args, out_dir=scratch)
        files = {}
        if scratch is not None:
            files = {str(p.relative_to(scratch)): p.read_bytes() for p in sorted(scratch.rglob("*")) if p.is_file()}
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return value, files, node_info(), time.perf_counter() - started


def place_files(files: dict[str, bytes], out_dir: Path) -> None:
    """A unit's files into its directory here."""
    for name, data in files.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


class RayExecutor:
    """Runs units as Ray tasks; connects on construction (or joins a Ray session already started)."""

    kind = "ray"

    def __init__(self, address: str | None = None) -> None:
        import ray

        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            ray.init(
                address=address or os.environ.get("RAY_ADDRESS"),
                include_dashboard=False,
                logging_level="ERROR",
                runtime_env={"env_vars": WORKER_ENV},
            )
        self.address = address or os.environ.get("RAY_ADDRESS") or "local"
        self._task = ray.remote(_run_unit)

    @property
    def slots(self) -> int:
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's live nodes: id, address and CPUs."""
        return [
            {"ray_node_id": n["NodeID"], "ip": n.get("NodeManagerAddress"), "cpus": n["Resources"].get("CPU", 0)}
            for n in self._ray.nodes()
            if n.get("Alive")
        ]

    def placement(self, units: Sequence[Unit]) -> dict[str, str]:
        """Pair key -> the node its units run on: keys go round-robin over the nodes with CPUs enough."""
        nodes = sorted(self.nodes(), key=lambda n: n["ray_node_id"])
        need: dict[str, float] = {}
        for u in units:
            if u.pair is not None:
                need[u.pair] = max(need.get(u.pair, 0.0), u.cpus)
        out: dict[str, str] = {}
        for i, (key, cpus) in enumerate(need.items()):
            fits = [n for n in nodes if n["cpus"] >= cpus] or nodes
            out[key] = fits[i % len(fits)]["ray_node_id"]
        return out

    def map(self, units: Sequence[Unit]) -> Iterator[UnitResult]:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        placed = self.placement(units)
        refs = {}
        for index, unit in enumerate(units):
            options: dict[str, Any] = {"num_cpus": unit.cpus}
            if unit.pair is not None:
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(placed[unit.pair], soft=False)
            ref = self._task.options(**options).remote(unit.fn, unit.args, unit.out_dir is not None)
            refs[ref] = index
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                value, files, node, seconds = ray.get(done[0])
            except ray.exceptions.RayTaskError as exc:
                raise exc.as_instanceof_cause() from None  # a unit's bad input stays one error line
            unit = units[refs[done[0]]]
            if unit.out_dir is not None:
                place_files(files, unit.out_dir)
            yield UnitResult(refs[done[0]], value, node, seconds)

    def describe(self) -> dict[str, Any]:
        return {"kind": "ray", "address": self.address, "ray": self._ray.__version__, "nodes": self.nodes()}

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
