"""Scheduling policies: which waiting sequence the scheduler looks at next.

A policy owns the waiting queue and nothing else, so a new order (SJF, priority, fair share) is a new
class here and never a change to the engine loop or the scheduler.
"""

from __future__ import annotations

import abc
import heapq
import itertools
from collections import deque
from collections.abc import Iterator

from engines.sequence import Sequence


def _insert_by_arrival(queue: deque[Sequence], seq: Sequence) -> None:
    """Append a new arrival; put a preempted sequence back where its arrival order says (the front)."""
    if queue and seq.seq_no < queue[-1].seq_no:
        index = next(i for i, other in enumerate(queue) if other.seq_no > seq.seq_no)
        queue.insert(index, seq)
    else:
        queue.append(seq)


class SchedulingPolicy(abc.ABC):
    """The waiting queue in one order: schedulers `peek` at the head, `pop` what they admit, `add` back
    what they preempt. `charge` tells fair-share policies what service a sequence received."""

    name: str = "policy"

    @abc.abstractmethod
    def add(self, seq: Sequence) -> None:
        """Queue a new or preempted sequence."""

    @abc.abstractmethod
    def peek(self) -> Sequence | None:
        """The sequence to consider next, or None when empty."""

    @abc.abstractmethod
    def pop(self) -> Sequence:
        """Take the head (the one `peek` returned)."""

    @abc.abstractmethod
    def remove(self, seq: Sequence) -> None:
        """Take `seq` out wherever it is (an abort)."""

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def __iter__(self) -> Iterator[Sequence]: ...

    def charge(self, seq: Sequence, input_tokens: int, output_tokens: int) -> None:  # noqa: B027
        """Account service a sequence received (used by fair-share policies)."""

    def promote(self, now: float) -> list[Sequence]:
        """Sequences moved to the front because they waited too long (`engines/aging.py`); none here."""
        return []

    def served_before(self, seq: Sequence) -> list[Sequence]:
        """The queued sequences this order would serve before `seq`, not yet queued, in about that order
        (SLO-aware admission predicts its wait from them); all of them unless the order says otherwise."""
        return list(self)

    @property
    def keeps_accounts(self) -> bool:
        """Whether `charge` does anything: the engine loop skips the call when it does not."""
        return type(self).charge is not SchedulingPolicy.charge


class FCFS(SchedulingPolicy):
    """First come, first served; a preempted sequence goes back to the front (it arrived earlier)."""

    name = "fcfs"

    def __init__(self) -> None:
        self._queue: deque[Sequence] = deque()

    def add(self, seq: Sequence) -> None:
        _insert_by_arrival(self._queue, seq)

    def peek(self) -> Sequence | None:
        return self._queue[0] if self._queue else None

    def pop(self) -> Sequence:
        return self._queue.popleft()

    def remove(self, seq: Sequence) -> None:
        self._queue.remove(seq)

    def __len__(self) -> int:
        return len(self._queue)

    def __iter__(self) -> Iterator[Sequence]:
        return iter(self._queue)


class _KeyedPolicy(SchedulingPolicy):
    """A heap ordered by `key(seq)`; removal is lazy."""

    def __init__(self) -> None:
        self._heap: list[tuple[tuple[float, ...], int, Sequence]] = []
        self._live: dict[int, Sequence] = {}
        self._counter = itertools.count()

    @abc.abstractmethod
    def key(self, seq: Sequence) -> tuple[float, ...]: ...

    def add(self, seq: Sequence) -> None:
        self._live[id(seq)] = seq
        heapq.heappush(self._heap, (self.key(seq), next(self._counter), seq))

    def _prune(self) -> None:
        while self._heap and id(self._heap[0][2]) not in self._live:
            heapq.heappop(self._heap)

    def peek(self) -> Sequence | None:
        self._prune()
        return self._heap[0][2] if self._heap else None

    def pop(self) -> Sequence:
        self._prune()
        seq = heapq.heappop(self._heap)[2]
        del self._live[id(seq)]
        return seq

    def remove(self, seq: Sequence) -> None:
        del self._live[id(seq)]

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[Sequence]:
        return iter(sorted(self._live.values(), key=lambda s: (self.key(s), s.seq_no)))

    def served_before(self, seq: Sequence) -> list[Sequence]:
        mine = self.key(seq)
        return sorted((s for s in self._live.values() if self.key(s) < mine), key=self.key)


class ShortestJobFirst(_KeyedPolicy):
    """Fewest tokens left to generate first (max_tokens is the only length a scheduler can know)."""

    name = "sjf"

    def key(self, seq: Sequence) -> tuple[float, ...]:
        return (seq.request.max_tokens - seq.num_output_tokens, seq.seq_no)


class PriorityFirst(_KeyedPolicy):
    """Lowest `priority` value first, FCFS within a priority."""

    name = "priority"

    def key(self, seq: Sequence) -> tuple[float, ...]:
        return (seq.request.priority, seq.seq_no)


class FairShare(SchedulingPolicy):
    """Virtual token counter (VTC, OSDI'24): serve the tenant that has received the least service.

    Service is 1 per input token and 2 per output token. A tenant that becomes backlogged is lifted to
    the smallest counter among backlogged tenants so it cannot bank credit while idle.
    """

    name = "fair"

    def __init__(self) -> None:
        self._queues: dict[str, deque[Sequence]] = {}
        self._counter: dict[str, float] = {}

    def _backlogged(self) -> list[str]:
        return [tenant for tenant, queue in self._queues.items() if queue]

    def add(self, seq: Sequence) -> None:
        tenant = seq.request.tenant
        queue = self._queues.setdefault(tenant, deque())
        if not queue:
            active = [self._counter[t] for t in self._backlogged() if t in self._counter]
            self._counter[tenant] = max(self._counter.get(tenant, 0.0), min(active, default=0.0))
        _insert_by_arrival(queue, seq)

    def peek(self) -> Sequence | None:
        backlogged = self._backlogged()
        if not backlogged:
            return None
        tenant = min(backlogged, key=lambda t: (self._counter.get(t, 0.0), self._queues[t][0].seq_no))
        return self._queues[tenant][0]

    def pop(self) -> Sequence:
        seq = self.peek()
        if seq is None:
            raise IndexError("pop from an empty queue")
        self._queues[seq.request.tenant].popleft()
        return seq

    def remove(self, seq: Sequence) -> None:
        self._queues[seq.request.tenant].remove(seq)

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def __iter__(self) -> Iterator[Sequence]:
        return iter(sorted((s for q in self._queues.values() for s in q), key=lambda s: s.seq_no))

    def served_before(self, seq: Sequence) -> list[Sequence]:
        """Served in turn by tenant, the least served first: a request behind k of its tenant's waits for about
        k + 1 of each tenant's served less so far, k of each served more."""
        tenant = seq.request.tenant
        own = len(self._queues.get(tenant, ()))
        mine = self._counter.get(tenant, 0.0)
        if not own:  # as `add` lifts it on becoming backlogged
            mine = max(mine, min((self._counter[t] for t in self._backlogged() if t in self._counter), default=0.0))
        first: list[Sequence] = []
        for other, queue in self._queues.items():
            take = len(queue) if other == tenant else own + (self._counter.get(other, 0.0) <= mine)
            first += itertools.islice(queue, take)
        return sorted(first, key=lambda s: s.seq_no)

    def charge(self, seq: Sequence, input_tokens: int, output_tokens: int) -> None:
        tenant = seq.request.tenant
        self._counter[tenant] = self._counter.get(tenant, 0.0) + input_tokens + 2.0 * output_tokens


class LanedQueue(SchedulingPolicy):
    """`inner`'s order plus one first-come lane, served before it (`lane_first`) or only when it is empty.

    The recovery controls are lanes: starvation aging puts requests that waited too long in front
    (`engines/aging.py`), SLO-aware admission's defer mode puts those predicted to miss the SLO behind
    (`engines/admission.py`). `inner` can be replaced (the fallback rule switches the policy).
    """

    lane_first = True

    def __init__(self, inner: SchedulingPolicy) -> None:
        self.inner = inner
        self.lane: deque[Sequence] = deque()

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def add(self, seq: Sequence) -> None:
        self.inner.add(seq)

    def peek(self) -> Sequence | None:
        if self.lane_first:
            return self.lane[0] if self.lane else self.inner.peek()
        head = self.inner.peek()
        return head if head is not None or not self.lane else self.lane[0]

    def pop(self) -> Sequence:
        if self.lane and (self.lane_first or self.inner.peek() is None):
            return self.lane.popleft()
        return self.inner.pop()

    def remove(self, seq: Sequence) -> None:
        if seq in self.lane:
            self.lane.remove(seq)
        else:
            self.inner.remove(seq)

    def __len__(self) -> int:
        return len(self.inner) + len(self.lane)

    def __iter__(self) -> Iterator[Sequence]:
        first, second = (self.lane, self.inner) if self.lane_first else (self.inner, self.lane)
        yield from first
        yield from second

    def charge(self, seq: Sequence, input_tokens: int, output_tokens: int) -> None:
        self.inner.charge(seq, input_tokens, output_tokens)

    def promote(self, now: float) -> list[Sequence]:
        return self.inner.promote(now)

    def served_before(self, seq: Sequence) -> list[Sequence]:
        inner = self.inner.served_before(seq)
        return [*self.lane, *inner] if self.lane_first else inner


def switch_policy(queue: SchedulingPolicy, name: str) -> SchedulingPolicy:
    """`queue` with its innermost order replaced by policy `name`, every queued sequence moved over."""
    if isinstance(queue, LanedQueue):
        queue.inner = switch_policy(queue.inner, name)
        return queue
    new = POLICIES[name]()
    for seq in list(queue):
        queue.remove(seq)
        new.add(seq)
    return new


POLICIES: dict[str, type[SchedulingPolicy]] = {
    cls.name: cls for cls in (FCFS, ShortestJobFirst, PriorityFirst, FairShare)
}


def make_policy(name: str) -> SchedulingPolicy:
    from engines.errors import EngineInputError

    try:
        return POLICIES[name]()
    except KeyError:
        raise EngineInputError(f"--policy {name!r}: expected one of {', '.join(POLICIES)}") from None
