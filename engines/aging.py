"""Starvation aging: a request that has waited longer than `after_s` jumps the queue.

Shortest-job-first and priority order can starve: a long request, or a low-priority one, waits as long as
shorter or more urgent work keeps arriving. `AgingQueue` wraps any policy; each step the scheduler calls
`promote(now)`, which moves every request that has waited past `after_s` (oldest first) into a first-come
lane served before the policy's own order. Off unless the `aging_s` engine option is set.
"""

from __future__ import annotations

from collections import deque

from engines.policy import LanedQueue, SchedulingPolicy
from engines.sequence import Sequence


class AgingQueue(LanedQueue):
    """`inner`'s order, except that requests waiting longer than `after_s` come first, oldest first."""

    lane_first = True

    def __init__(self, inner: SchedulingPolicy, after_s: float) -> None:
        super().__init__(inner)
        self.after_s = after_s
        self._arrivals: deque[Sequence] = deque()  # arrival order; entries no longer in `inner` are skipped
        self._queued: set[int] = set()  # ids of the sequences now in `inner`

    def add(self, seq: Sequence) -> None:
        self.inner.add(seq)
        self._queued.add(id(seq))
        self._arrivals.append(seq)

    def pop(self) -> Sequence:
        seq = super().pop()
        self._queued.discard(id(seq))
        return seq

    def remove(self, seq: Sequence) -> None:
        super().remove(seq)
        self._queued.discard(id(seq))

    def promote(self, now: float) -> list[Sequence]:
        """Move the requests that waited past `after_s` to the front lane; returns them."""
        promoted: list[Sequence] = []
        arrivals, queued = self._arrivals, self._queued
        while arrivals:
            head = arrivals[0]
            if id(head) not in queued:
                arrivals.popleft()
                continue
            if now - head.enqueue_time <= self.after_s:
                break
            arrivals.popleft()
            self.inner.remove(head)
            queued.discard(id(head))
            self.lane.append(head)
            promoted.append(head)
        return promoted


def aged(policy: SchedulingPolicy, after_s: float | None) -> SchedulingPolicy:
    """`policy` with starvation aging after `after_s` seconds (None: off, `policy` itself)."""
    return policy if after_s is None else AgingQueue(policy, after_s)
