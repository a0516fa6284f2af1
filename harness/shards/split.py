"""How one schedule is split over N load-generator workers.

- Closed loop: the users are dealt out in contiguous blocks (a user lives on one worker for the whole run)
  and each worker gets exactly its users' requests: user u sends requests u, u + users, ... as in an
  unsharded closed loop, so a sharded run pairs with an unsharded one on (request, user).
- Open loop (and offline), when the workload has at least N tenants: whole tenants go to the worker with the
  fewest requests so far (largest tenant first), so a tenant's requests all leave from one worker.
- Otherwise round robin by position: every worker offers 1/N of the rate, evenly spread in time.
- Sessions: whole sessions are dealt out round robin in order of their first turn (a session's turns
  depend on each other, so they all leave from one worker).
Other workloads' requests carry no session id; a tenant is the finest grouping there is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from harness.loadgen import Scenario, Scheduled


@dataclass(frozen=True)
class Shard:
    """One worker's part of a schedule and the scenario it offers it under."""

    worker: int
    schedule: list[Scheduled]
    scenario: Scenario
    first_user: int = 0  # closed loop: the global index of this worker's user 0


def split_schedule(schedule: list[Scheduled], n: int, scenario: Scenario) -> tuple[list[Shard], str]:
    """`n` shards of `schedule` (every request in exactly one), and what they were split by."""
    if scenario.kind == "closed":
        users = [scenario.users // n + (i < scenario.users % n) for i in range(n)]
        users = [u for u in users if u > 0] or [1]
        total = sum(users)
        shards, first = [], 0
        for i, u in enumerate(users):
            # the worker's users first..first+u-1 take requests k with k % total in that block; in list order
            # its own round robin then gives local user (k % total) - first, the same user as unsharded
            mine = [item for k, item in enumerate(schedule) if first <= k % total < first + u]
            shards.append(Shard(i, mine, replace(scenario, users=u), first))
            first += u
        return shards, "closed-loop users"
    if scenario.kind == "sessions":
        worker: dict[str | None, int] = {}
        by_session: list[list[Scheduled]] = [[] for _ in range(n)]
        for item in schedule:
            key = item.session if item.session is not None else item.request.request_id
            by_session[worker.setdefault(key, len(worker) % n)].append(item)
        return [Shard(i, part, scenario) for i, part in enumerate(by_session)], "session"
    tenants = Counter(item.request.tenant for item in schedule)
    if len(tenants) >= n > 1:
        loads = [0] * n
        owner: dict[str, int] = {}
        for tenant, count in sorted(tenants.items(), key=lambda kv: (-kv[1], kv[0])):
            owner[tenant] = loads.index(min(loads))
            loads[owner[tenant]] += count
        parts: list[list[Scheduled]] = [[] for _ in range(n)]
        for item in schedule:
            parts[owner[item.request.tenant]].append(item)
        return [Shard(i, part, scenario) for i, part in enumerate(parts)], "tenant"
    return [Shard(i, schedule[i::n], scenario) for i in range(n)], "position (round robin)"
