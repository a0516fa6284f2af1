"""A unit of work and the interface every executor offers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Unit:
    """One independent piece of a benchmark: `fn(*args, out_dir=DIR)` writes its files into DIR.

    `cpus`: what the unit will use (an in-process engine: its torch threads; a simulation: 1), so a Ray
    node never runs more units at once than it has cores for. `pair`: units that are compared request by
    request share a key; they run on one node, one after the other in the order given. `out_dir`: where
    the unit's files belong (None: it writes none)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    out_dir: Path | None = None
    cpus: float = 1.0
    pair: str | None = None
    name: str = ""


@dataclass
class UnitResult:
    """What a unit returned, where it ran, and how long it took there."""

    index: int  # the unit's position in the list given to `map`
    value: Any
    node: dict[str, Any] = field(default_factory=dict)  # `node_info()` of the machine that ran it
    seconds: float = 0.0


class Executor(Protocol):
    """Runs units; `map` yields each result as its unit finishes (local: in order)."""

    kind: str

    @property
    def slots(self) -> int:
        """How many one-CPU units can run at once (local: 1)."""
        ...

    def map(self, units: Sequence[Unit]) -> Iterator[UnitResult]: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
