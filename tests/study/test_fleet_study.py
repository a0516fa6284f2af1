"""A study's variants may change a simulated fleet's own keys (router, replicas, P:D pools): tests/study/fleet.toml
is a 2 x 2 grid of router policy x replica count (harness/study/variants.py). It runs, each arm on each slice a
unit, on the local Ray cluster in tests/executor/test_executor_ray.py (the study runner is the same locally)."""

from __future__ import annotations

from pathlib import Path

from harness.study.plan import load_plan
from harness.study.variants import change_problem, resolve

HERE = Path(__file__).parent


def test_the_fleet_plan_makes_a_router_by_replicas_grid() -> None:
    plan = load_plan(HERE / "fleet.toml")
    arms = {arm.name: arm.spec for arm in resolve(plan.baseline, plan.variants)}
    replica = "replica=sim:model=llama-3.1-8b,hardware=h100"  # the rest of the spec stays last, untouched
    assert arms == {
        "baseline": f"cluster:replicas=2,router=round_robin,label=baseline,{replica}",
        "least-2": f"cluster:replicas=2,router=least_outstanding,label=least-2,{replica}",
        "rr-3": f"cluster:replicas=3,router=round_robin,label=rr-3,{replica}",
        "least-3": f"cluster:replicas=3,router=least_outstanding,label=least-3,{replica}",
    }


def test_a_fleet_change_must_be_one_of_its_keys() -> None:
    base = "cluster:replicas=2,replica=sim:model=llama-3.1-8b"
    assert change_problem(base, {"router": "power_of_two"}) is None
    assert "unknown assumption 'prefill' of a cluster engine" in str(change_problem(base, {"prefill": 2}))
    assert change_problem("disagg:prefill=1,decode=1,replica=sim", {"decode": 3}) is None
