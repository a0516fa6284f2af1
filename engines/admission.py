"""SLO-aware admission: refuse, or hold back, a new request whose predicted TTFT already misses the SLO.

A queue-length cap (`serve --max-waiting`) knows nothing of time. This guard predicts each new request's
time to first token when it arrives and compares it with `slo_s`. The prediction is the largest of

    queue   (requests the policy serves first + 1 if every slot is taken) / admissions per second
    tenant  the tenant's queued requests / the tenant's own admissions per second
    head    how long the tenant's oldest queued request has waited already

with each rate measured over the last `window` admissions up to now, counting only admissions of steps
that left work queued (when slots are free, admissions say how fast work arrives, not how fast it
drains). The tenant terms say what the policy actually gives this tenant: under fair sharing a heavy
tenant is served last, which no count of the queue can tell; and they fall back to nothing once its
queue is empty, so a tenant is never shut out.
Over the SLO, `shed` refuses the request at once (it finishes as an error of type `slo_shed`;
`batchmark serve` answers 429 with Retry-After), and `defer` queues it behind all work that can still
make the SLO, served when the queue is otherwise empty. Before `MIN_ADMITS` admissions have been seen
there is no rate and everything is admitted. Each refusal or deferral is a decision of stage 1 in the
step trace, with the prediction. Off unless the `admission` engine option is set.
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

MIN_ADMITS = 4  # admissions seen before the rate is trusted


@dataclass(frozen=True)
class AdmissionConfig:
    """`mode` "shed" or "defer"; `slo_s` the TTFT a new request must be predicted to meet."""

    mode: str
    slo_s: float
    window: int = 32  # admissions the rate is measured over


class DeferredLane(LanedQueue):
    """The policy's queue, then the deferred requests in arrival order when nothing else waits."""

    lane_first = False

    def defer(self, seq: Sequence) -> None:
        self.lane.append(seq)


def _wait(admits: deque[float], count: int, now: float) -> float | None:
    """Seconds to serve `count` requests at the rate of `admits` (times, oldest first) up to `now`."""
    if len(admits) < MIN_ADMITS:
        return None
    if count <= 0:
        return 0.0
    span = now - admits[0]
    return count * span / len(admits) if span > 0 else math.inf


class AdmissionGuard:
    """Decides at arrival whether a request is admitted to the queue, deferred behind it, or shed."""

    def __init__(self, config: AdmissionConfig) -> None:
        self.config = config
        self._admits: deque[float] = deque(maxlen=config.window)
        self._tenant_admits: dict[str, deque[float]] = {}
        self._queued: dict[str, deque[Sequence]] = {}  # tenant -> its requests queued, in arrival order
        self._pending: list[dict[str, Any]] = []  # decisions taken at arrival, for the next step's record

    def wrap(self, policy: SchedulingPolicy) -> SchedulingPolicy:
        return DeferredLane(policy) if self.config.mode == "defer" else policy

    def predicted_ttft(self, seq: Sequence, waiting: SchedulingPolicy, running: int, slots: int) -> float | None:
        """Seconds until `seq` (arriving at its enqueue time) gets its first token, or None without a rate."""
        now = seq.enqueue_time
        queue = _wait(self._admits, waiting.ahead_of(seq) + (1 if running >= slots else 0), now)
        if queue is None:
            return None
        mine = self._queued.setdefault(seq.request.tenant, deque())
        while mine and mine[0].status is not SequenceStatus.WAITING:
            mine.popleft()  # admitted, shed or aborted since
        head = now - mine[0].enqueue_time if mine else 0.0
        tenant = _wait(self._tenant_admits.get(seq.request.tenant, deque()), len(mine), now) or 0.0
        return max(queue, tenant, head)

    def check(self, seq: Sequence, waiting: SchedulingPolicy, running: int, slots: int) -> bool:
        """Queue `seq` (True), or defer or shed it as the mode says (False: the caller must not queue it)."""
        predicted = self.predicted_ttft(seq, waiting, running, slots)
        if predicted is None or predicted <= self.config.slo_s:
            self._queued.setdefault(seq.request.tenant, deque()).append(seq)
            return True
        detail = {"why": "predicted_ttft", "predicted_ttft_s": round(predicted, 4), "slo_s": self.config.slo_s}
        if self.config.mode == "defer" and isinstance(waiting, DeferredLane):
            waiting.defer(seq)
            self._pending.append({"stage": Stage.ENQUEUE, "action": "defer", "id": seq.request_id, **detail})
            return False
        seq.status, seq.finish_reason = SequenceStatus.FINISHED, "error"
        seq.error_type = "slo_shed"
        seq.retry_after_s = max(1.0, predicted - self.config.slo_s) if math.isfinite(predicted) else None
        seq.error_message = (
            f"predicted time to first token {predicted:.2f} s exceeds the SLO of {self.config.slo_s:g} s; retry later"
        )
        self._pending.append({"stage": Stage.ENQUEUE, "action": "shed", "id": seq.request_id, **detail})
        return False

    def after_step(self, plan: StepPlan, now: float) -> None:
        """Count the step's admissions towards the rates; the step's record carries the arrival decisions."""
        if plan.admitted and plan.blocked_reason is not None:  # the queue outlasted the step: a drain-rate sample
            self._admits.extend([now] * len(plan.admitted))
            admitted = set(plan.admitted)
            for chunk in plan.chunks:
                seq = chunk.seq
                if seq.request_id in admitted:
                    tenant = seq.request.tenant
                    if tenant not in self._tenant_admits:
                        self._tenant_admits[tenant] = deque(maxlen=self.config.window)
                    self._tenant_admits[tenant].append(now)
        if self._pending:
            plan.decisions[:0] = self._pending
            self._pending = []
