"""A simulated cluster: replicas behind a router on one virtual clock (engines/sim/cluster.py, router.py)."""

from __future__ import annotations

import pytest

from engines.api import Request
from harness.engine_specs import build_engine, parse_engine_specs
from harness.errors import user_errors
from harness.loadgen import Scheduled
from harness.loadgen.replay import build_schedule
from harness.loadgen.sessions import run_virtual_session_loop
from harness.loadgen.virtual import run_virtual_open_loop
from harness.records import RequestRecord
from workloads import load_workload

REPLICA = "replica=sim:model=llama-3.1-8b,hardware=h100"


def cluster(text: str):
    (spec,) = parse_engine_specs([text], {})
    return spec, build_engine(spec, None)


def run_open(engine, schedule: list[Scheduled]) -> list[RequestRecord]:
    records: list[RequestRecord] = []
    run_virtual_open_loop(engine, schedule, records.append, label="c")
    return records


def test_round_robin_spreads_a_uniform_workload_within_one_request() -> None:
    _, engine = cluster(f"cluster:replicas=4,router=round_robin,{REPLICA}")
    schedule = [
        Scheduled(Request(f"r{i}", list(range(i * 64, i * 64 + 64)), 16, ignore_eos=True), i * 0.01) for i in range(43)
    ]
    records = run_open(engine, schedule)
    assert len(records) == 43 and all(r.output_tokens == 16 and r.error_type is None for r in records)
    counts = [sum(r.replica == i for r in records) for i in range(4)]
    assert max(counts) - min(counts) <= 1 and sum(counts) == 43
    router = engine.describe()["router"]
    assert router["requests_per_replica"] == counts and router["decisions"] == {"round_robin": 43}
    assert router["imbalance_max_over_mean"] == pytest.approx(max(counts) / (43 / 4))


def test_replicas_share_one_clock_and_the_load_finishes_sooner_than_on_one() -> None:
    schedule = [
        Scheduled(Request(f"r{i}", list(range(i * 512, i * 512 + 512)), 64, ignore_eos=True), 0.0) for i in range(32)
    ]
    one = run_open(cluster(f"cluster:replicas=1,{REPLICA}")[1], schedule)
    four = run_open(cluster(f"cluster:replicas=4,router=least_outstanding,{REPLICA}")[1], schedule)
    assert {r.replica for r in four} == {0, 1, 2, 3}
    assert max(r.t_finish for r in four) < max(r.t_finish for r in one)  # type: ignore[type-var]
    for r in four:  # each request's tokens come in time order on its replica's clock
        assert r.token_times == sorted(r.token_times) and len(r.token_times) == 64


def hit_rate(text: str) -> float:
    workload = load_workload("multi-turn-chat")
    schedule = build_schedule(workload, 32000, (), 0, lengths_only=True)
    records: list[RequestRecord] = []
    run_virtual_session_loop(cluster(text)[1], schedule, records.append, label="c")
    assert len(records) == len(workload.requests) and all(r.error_type is None for r in records)
    return sum(r.cached_tokens or 0 for r in records) / sum(r.prompt_tokens for r in records)


def test_cache_aware_routing_hits_the_prefix_cache_more_than_round_robin() -> None:
    rr = hit_rate(f"cluster:replicas=4,router=round_robin,{REPLICA}")
    aware = hit_rate(f"cluster:replicas=4,router=cache_aware,{REPLICA}")
    sticky = hit_rate(f"cluster:replicas=4,router=session_sticky,{REPLICA}")
    assert aware > rr and sticky > rr


@pytest.mark.parametrize("policy", ["random", "power_of_two", "least_outstanding", "session_sticky"])
def test_every_policy_serves_every_request(policy: str) -> None:
    schedule = [Scheduled(Request(f"r{i}", [i + 1] * 48, 8, ignore_eos=True), i * 0.002) for i in range(20)]
    records = run_open(cluster(f"cluster:replicas=3,router={policy},load=tokens,seed=5,{REPLICA}")[1], schedule)
    assert len(records) == 20 and all(r.output_tokens == 8 and r.replica in (0, 1, 2) for r in records)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("cluster:replicas=0," + REPLICA, "replicas"),
        ("cluster:router=fastest," + REPLICA, "fastest"),
        ("cluster:balance_rel=nan," + REPLICA, "balance_rel"),
        ("cluster:replicas=2,replica=http:url=x", "replica="),
        ("cluster:colour=blue," + REPLICA, "colour"),
        ("cluster:path_ms=nan," + REPLICA, "path_ms"),
        ("cluster:path_ms=-1," + REPLICA, "path_ms"),
    ],
)
def test_bad_cluster_specs_name_the_field(text: str, named: str) -> None:
    with pytest.raises(user_errors()) as caught:
        parse_engine_specs([text], {})
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_the_run_says_how_the_router_spread_the_load() -> None:
    from harness.metrics.simulation import manifest_notices

    _, engine = cluster(f"cluster:replicas=2,router=round_robin,label=rr,{REPLICA}")
    run_open(engine, [Scheduled(Request(f"r{i}", [7] * 64, 4, ignore_eos=True), i * 0.5) for i in range(4)])
    lines = manifest_notices({"engines": [engine.describe()]})
    assert lines[0].startswith("SIMULATED: rr ran in virtual time")
    assert "requests per replica [2, 2], imbalance max/mean 1.00" in lines[1]
    # each replica's second identical 64-token prompt takes 3 of its 4 blocks from the cache (the block holding
    # the last prompt token is computed, as in vLLM): 2 x 48 of 256 prompt tokens
    assert "round_robin 4" in lines[1] and "hit rate 37.5%" in lines[1]


def test_power_of_two_breaks_ties_by_its_seeded_draw() -> None:
    """Equal loads: the first of the two drawn replicas wins (as vllm-router's `load1 <= load2`), so ties spread
    over both replicas instead of always going to replica 0; the same seed draws the same choices."""
    from engines.sim.router import Router, RouterConfig

    def choices(seed: int) -> list[int]:
        router = Router(RouterConfig(policy="power_of_two", seed=seed), 2)
        picked = []
        for i in range(40):
            picked.append(router.route(Request(f"r{i}", [1] * 16, 4)))
            router.finished(f"r{i}")  # every choice is made on equal (zero) loads
        return picked

    picked = choices(3)
    assert 10 <= picked.count(0) <= 30 and picked == choices(3)
    loaded = Router(RouterConfig(policy="power_of_two", seed=3), 2)
    loaded.route(Request("busy", [1] * 16, 4))  # one request in flight on whichever replica took it
    busy = loaded.served.index(1)
    assert loaded.route(Request("next", [1] * 16, 4)) != busy  # unequal loads: the idle one, whichever is drawn


def test_path_ms_adds_its_delay_to_ttft_and_e2e_and_nothing_to_tpot() -> None:
    """Requests far apart (no queue): each one's tokens come exactly D later, its token gaps unchanged; requests
    sent together still all arrive, each routed on the load it finds D later."""
    apart = [Scheduled(Request(f"r{i}", [i + 1] * 64, 8, ignore_eos=True), i * 1.0) for i in range(6)]
    base = {r.request_id: r for r in run_open(cluster(f"cluster:replicas=2,{REPLICA}")[1], apart)}
    held = {r.request_id: r for r in run_open(cluster(f"cluster:replicas=2,path_ms=25,{REPLICA}")[1], apart)}
    for rid, r in held.items():
        assert r.token_times == pytest.approx([t + 0.025 for t in base[rid].token_times])
        assert r.t_scheduled == base[rid].t_scheduled and r.replica == base[rid].replica
    burst = [Scheduled(Request(f"b{i}", [i + 1] * 64, 8, ignore_eos=True), 0.0) for i in range(10)]
    _, engine = cluster(f"cluster:replicas=3,router=least_outstanding,path_ms=5,{REPLICA}")
    records = run_open(engine, burst)
    assert len(records) == 10 and all(r.output_tokens == 8 and min(r.token_times) > 0.005 for r in records)
    assert engine.describe()["path_ms"] == 5 and sorted(engine.describe()["router"]["requests_per_replica"]) == [
        3,
        3,
        4,
    ]
