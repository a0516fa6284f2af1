"""SLO-aware admission: refuse, or hold back, a new request whose predicted TTFT already misses the SLO.

A queue-length cap (`serve --max-waiting`) knows nothing of time. This guard predicts each new request's
time to first token when it arrives and compares it with `slo_s`. The prediction is the largest of

    queue   until a slot is free for it behind the requests the policy serves first, and its prompt computed
    tenant  until the tenant's own running requests have freed a slot for each of its queued ones
    head    how long the tenant's oldest queued request has waited already

The tenant term says what the policy actually gives this tenant: under fair sharing a heavy tenant is
served last, which no count of the queue can tell; it falls back to nothing once its queue is empty, so a
tenant is never shut out.

How the queue and tenant terms become seconds depends on what the engine knows of its own speed. An engine
with a cost model (the simulator) prices them with it (`price_with`): each running sequence holds its slot
for the tokens it has left, each step costs what the cost model says a step of that batch costs
(`engines/ttft_forecast.py`), so the guard predicts on the very model the engine runs on. An engine without
one (the in-process engines, `serve`) measures its drain: (requests ahead + 1 if every slot is taken) x
the gap between finishes, overall and the tenant's own, over the last `window` finishes, the gap taken as at
least the time since the latest one (slots held by long requests stall the queue: a rate of the past would
not see it). Until `MIN_FINISHES` requests have finished that rate is unknown: a request that finds a free
slot and an empty queue is admitted, one that would have to queue cannot be promised the SLO.

Over the target, `shed` refuses the request at once (it finishes as an error of type `slo_shed`;
`batchmark serve` answers 429 with Retry-After), and `defer` queues it behind all work that can still
make the SLO, served when the queue is otherwise empty. Each refusal or deferral is a decision of stage 1
in the step trace, with the prediction. Off unless the `admission` engine option is set.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from engines.plan import StepPlan
from engines.policy import LanedQueue, SchedulingPolicy
from engines.sequence import Sequence, SequenceStatus
from engines.stages import Stage
from engines.ttft_forecast import StepPrice, forecast_ttft, steps_seconds, tenant_steps

MIN_FINISHES = 4  # finishes seen before the drain rate is trusted


@dataclass(frozen=True)
class AdmissionConfig:
    """`mode` "shed" or "defer"; `slo_s` the TTFT a new request must be predicted to meet."""

    mode: str
    slo_s: float
    window: int = 32  # finishes the drain rate is measured over


class DeferredLane(LanedQueue):
    """The policy's queue, then the deferred requests in arrival order when nothing else waits."""

    lane_first = False

    def defer(self, seq: Sequence) -> None:
        self.lane.append(seq)


def _wait(finishes: deque[float], count: int, now: float) -> float | None:
    """Seconds to serve `count` requests at the rate of `finishes` (times, oldest first), the gap between
    two finishes being at least the time since the latest one; None: no rate yet."""
    if count <= 0:
        return 0.0
    if len(finishes) < MIN_FINISHES or finishes[-1] <= finishes[0]:
        return None
    gap = max((finishes[-1] - finishes[0]) / (len(finishes) - 1), now - finishes[-1])
    return count * gap


class AdmissionGuard:
    """Decides at arrival whether a request is admitted to the queue, deferred behind it, or shed."""

    def __init__(self, config: AdmissionConfig) -> None:
        self.config = config
        self._finishes: deque[float] = deque(maxlen=config.window)
        self._tenant_finishes: dict[str, deque[float]] = {}
        self._now = 0.0  # the latest step's time
        self._queued: dict[str, deque[Sequence]] = {}  # tenant -> its requests queued, in arrival order
        self._pending: list[dict[str, Any]] = []  # decisions taken at arrival, for the next step's record
        self._price: StepPrice | None = None  # the engine's cost model, where it has one

    def price_with(self, price: StepPrice) -> None:
        """Predict on the engine's own cost model (seconds per step of given counts), not a measured rate."""
        self._price = price

    def wrap(self, policy: SchedulingPolicy) -> SchedulingPolicy:
        return DeferredLane(policy) if self.config.mode == "defer" else policy

    def predicted_ttft(
        self, seq: Sequence, waiting: SchedulingPolicy, running: list[Sequence], slots: int, budget: int
    ) -> float:
        """Seconds until `seq` (arriving at its enqueue time) gets its first token (inf: it would queue and
        no drain rate is known yet); `budget` is the step's token budget."""
        now, tenant = seq.enqueue_time, seq.request.tenant
        ahead = waiting.served_before(seq)
        mine = self._queued.setdefault(tenant, deque())
        while mine and mine[0].status is not SequenceStatus.WAITING:
            mine.popleft()  # admitted, shed or aborted since
        head = now - mine[0].enqueue_time if mine else 0.0
        price = self._price
        if price is not None:
            queue = forecast_ttft(seq, running, ahead, slots, budget, price)
            own = [s for s in running if s.request.tenant == tenant]
            return max(queue, steps_seconds(tenant_steps(own, list(mine), budget), running, slots, price), head)
        measured = _wait(self._finishes, len(ahead) + (1 if len(running) >= slots else 0), now)
        if measured is None:
            return math.inf  # it would have to queue, and how fast the queue drains is not known yet
        own_rate = _wait(self._tenant_finishes.get(tenant, deque()), len(mine), now) or 0.0
        return max(measured, own_rate, head)

    def target(self, seq: Sequence) -> float:
        """The TTFT `seq` must be predicted to meet: its own (an SLO class's), else the configured one."""
        own = seq.request.admission_slo_s
        return self.config.slo_s if own is None else own

    def check(self, seq: Sequence, waiting: SchedulingPolicy, running: list[Sequence], slots: int, budget: int) -> bool:
        """Queue `seq` (True), or defer or shed it as the mode says (False: the caller must not queue it)."""
        predicted = self.predicted_ttft(seq, waiting, running, slots, budget)
        slo = self.target(seq)
        if predicted <= slo:
            self._queued.setdefault(seq.request.tenant, deque()).append(seq)
            return True
        known = math.isfinite(predicted)
        detail = {
            "why": "predicted_ttft" if known else "no_drain_rate",
            "predicted_ttft_s": round(predicted, 4) if known else None,
            "slo_s": slo,
        }
        if self.config.mode == "defer" and isinstance(waiting, DeferredLane):
            waiting.defer(seq)
            self._pending.append({"stage": Stage.ENQUEUE, "action": "defer", "id": seq.request_id, **detail})
            return False
        seq.status, seq.finish_reason = SequenceStatus.FINISHED, "error"
        seq.error_type = "slo_shed"
        seq.retry_after_s = max(1.0, predicted - slo) if math.isfinite(predicted) else None
        seq.error_message = (
            f"predicted time to first token {predicted:.2f} s exceeds the SLO of {slo:g} s; retry later"
            if known
            else f"the queue's drain rate is not known yet: a time to first token within {slo:g} s cannot be "
            "promised; retry later"
        )
        self._pending.append({"stage": Stage.ENQUEUE, "action": "shed", "id": seq.request_id, **detail})
        return False

    def after_step(self, plan: StepPlan, now: float) -> None:
        """The step's record carries the decisions taken at arrival."""
        self._now = now
        if self._pending:
            plan.decisions[:0] = self._pending
            self._pending = []

    def finished(self, seqs: list[Sequence]) -> None:
        """Sequences that finished in the latest step: samples of the drain rate, overall and per tenant."""
        for seq in seqs:
            self._finishes.append(self._now)
            tenant = seq.request.tenant
            if tenant not in self._tenant_finishes:
                self._tenant_finishes[tenant] = deque(maxlen=self.config.window)
            self._tenant_finishes[tenant].append(self._now)
