"""A fleet scraped replica by replica (`scrape=URL|URL`, rows naming their `replica` and `tick`): the fleet's
counters are the replicas' deltas summed, its gauges summed tick by tick, a replica whose counters went backwards
leaves the counter figures n/a naming it, and each replica's own summary is kept."""

from __future__ import annotations

from typing import Any

import pytest

from harness.metrics.prefix_cache import hit_rate_said
from harness.metrics.server_series import WENT_BACKWARDS, as_step_frame, server_summary


def sample(replica: str, tick: int, queries: float, hits: float, running: float, kv: float) -> dict[str, Any]:
    gauges = {"running": running, "waiting": 0.0, "kv_usage": kv}
    counters = {"preemptions": 0.0, "prefix_queries": queries, "prefix_hits": hits}
    return {"t": 0.25 * tick - 0.1, "ok": True, "replica": replica, "tick": tick, **gauges, **counters}


def two_replicas(b_queries: list[float]) -> list[dict[str, Any]]:
    """Replica a counts 100 prompt tokens looked up, 50 found, per tick from 1000 (its own start); b counts
    `b_queries` (none found)."""
    rows = []
    for tick, b in enumerate(b_queries):
        rows.append(sample("a", tick, 1000 + 100 * tick, 500 + 50 * tick, running=1 + tick % 2, kv=0.2))
        rows.append(sample("b", tick, b, 0, running=2, kv=0.4))
    return rows


def test_the_fleet_sums_its_replicas_counters_and_keeps_each_replicas_own() -> None:
    server = server_summary(two_replicas([72, 82, 92, 102]))
    # deltas: a 300 looked up, 150 found; b 30 and 0: the fleet 150 of 330 (its counters' levels never mix)
    assert server["prefix_cache"] == {"hit_rate": pytest.approx(150 / 330), "hit_tokens": 150, "query_tokens": 330}
    assert server["preemptions"] == 0 and server["unknown"] == {}
    assert server["running_peak"] == 4  # 2 + 2 at the ticks where a ran 2
    assert server["kv_usage_peak"] == pytest.approx(0.3)  # the replicas' mean share
    assert set(server["replicas"]) == {"a", "b"}
    assert server["replicas"]["a"]["prefix_cache"]["hit_rate"] == 0.5
    assert server["replicas"]["b"]["prefix_cache"]["hit_rate"] == 0
    assert hit_rate_said({"server": server, "prefix_cache": None}).startswith("45.5% (server counters: 150 of 330")
    frame = as_step_frame(two_replicas([72, 82, 92, 102]))
    assert frame is not None and len(frame) == 4 and list(frame["kv_blocks_used"]) == pytest.approx([0.3] * 4)


def test_a_replica_whose_counters_go_backwards_is_n_a_with_the_reason() -> None:
    server = server_summary(two_replicas([72, 82, 10, 20]))  # b restarted between ticks 1 and 2
    reason = f"replica b: {WENT_BACKWARDS}"
    assert server["prefix_cache"] is None and server["preemptions"] is None
    assert server["unknown"]["prefix_cache"] == reason == server["unknown"]["preemptions"]
    assert hit_rate_said({"server": server, "prefix_cache": None}) == f"n/a ({reason})"
    assert server["running_peak"] == 4  # gauges are each replica's own at every tick: still known
    assert server["replicas"]["a"]["prefix_cache"]["hit_rate"] == 0.5  # a's own figure stands


def test_a_replica_that_never_answered_leaves_the_fleet_unknown() -> None:
    rows = [r for r in two_replicas([72, 82, 92]) if r["replica"] == "a"]
    rows += [
        {"t": 0.25 * tick - 0.1, "ok": False, "error": "Cannot connect", "replica": "b", "tick": tick}
        for tick in range(3)
    ]
    server = server_summary(rows)
    assert server["prefix_cache"] is None and server["running_peak"] is None
    assert server["unknown"]["prefix_cache"] == "replica b: no scrape of it succeeded"
    assert server["gaps"] == 3 and server["partial"] is True
