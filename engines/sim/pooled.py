"""What a simulated cluster and a P/D pair share: several simulated engines seen as one virtual-time engine."""

from __future__ import annotations

from engines.api import StepSink
from engines.sim.engine import SimEngine


class PooledEngine:
    """The virtual-time engine interface over `replicas`; subclasses route requests and run the steps."""

    virtual_time = True
    replicas: list[SimEngine]

    @property
    def now(self) -> float:  # the clock of the replica furthest ahead: where the run as a whole has reached
        return max(r.now for r in self.replicas)

    async def start(self) -> None:
        for r in self.replicas:
            await r.start()

    async def stop(self) -> None:
        return None

    def set_step_sink(self, sink: StepSink | None) -> None:
        return None  # the replicas' steps would interleave in one file, their step numbers colliding

    @property
    def in_flight(self) -> int:
        return sum(r.in_flight for r in self.replicas)
