"""Scheduling policies order the waiting queue; the scheduler and engine loop never change for them."""

from __future__ import annotations

from engines.api import Request
from engines.policy import FCFS, FairShare, PriorityFirst, ShortestJobFirst
from engines.sequence import Sequence


def seq(no: int, max_tokens: int = 10, tenant: str = "a", priority: int = 0) -> Sequence:
    return Sequence.from_request(Request(f"s{no}", [5, 6], max_tokens, tenant=tenant, priority=priority), no, 0.0)


def drain(policy) -> list[str]:
    out = []
    while policy.peek() is not None:
        out.append(policy.pop().request_id)
    return out


def test_fcfs_puts_a_preempted_sequence_back_in_arrival_order():
    policy = FCFS()
    for s in (seq(0), seq(1), seq(2)):
        policy.add(s)
    first = policy.pop()
    policy.add(seq(3))
    policy.add(first)  # preempted: it arrived before everything still waiting
    assert drain(policy) == ["s0", "s1", "s2", "s3"]


def test_sjf_and_priority_orders():
    sjf, prio = ShortestJobFirst(), PriorityFirst()
    for s in (seq(0, 50, priority=2), seq(1, 5, priority=1), seq(2, 20, priority=1)):
        sjf.add(s)
        prio.add(s)
    assert drain(sjf) == ["s1", "s2", "s0"]
    assert drain(prio) == ["s1", "s2", "s0"]


def test_removal_from_keyed_policies():
    policy = ShortestJobFirst()
    items = [seq(i, 10 - i) for i in range(4)]
    for s in items:
        policy.add(s)
    policy.remove(items[3])
    assert len(policy) == 3 and drain(policy) == ["s2", "s1", "s0"]


def test_fair_share_serves_the_tenant_with_least_service():
    policy = FairShare()
    for i in range(4):
        policy.add(seq(i, tenant="heavy"))
    policy.add(seq(10, tenant="light"))
    head = policy.pop()
    assert head.request.tenant == "heavy"  # equal counters: arrival order decides
    policy.charge(head, input_tokens=100, output_tokens=50)  # heavy has now received 200 units of service
    assert policy.peek().request.tenant == "light"
    policy.charge(policy.pop(), input_tokens=10, output_tokens=5)
    assert policy.pop().request.tenant == "heavy"  # light has nothing left waiting


def test_a_new_tenant_does_not_bank_credit_while_idle():
    policy = FairShare()
    early = seq(0, tenant="a")
    policy.add(early)
    policy.charge(policy.pop(), input_tokens=1000, output_tokens=0)
    policy.add(seq(1, tenant="a"))
    policy.add(seq(2, tenant="b"))  # b joins late: lifted to the smallest backlogged counter (a's 1000)
    assert policy._counter["b"] == 1000


def test_the_engine_loop_charges_only_a_policy_that_keeps_accounts():
    from engines.block_manager import BlockManager
    from engines.contract import apply_step
    from engines.plan import Chunk, StepPlan
    from engines.sequence import SequenceStatus

    assert FairShare().keeps_accounts and not FCFS().keeps_accounts and not ShortestJobFirst().keeps_accounts
    fair = FairShare()
    prefill, decode = seq(0, tenant="a"), seq(1, tenant="b")
    decode.num_computed_tokens = 2
    decode.append_token(7)
    for s in (prefill, decode):
        s.status = SequenceStatus.RUNNING
    plan = StepPlan([Chunk(prefill, 2, yields_token=True), Chunk(decode, 1, yields_token=True)])
    apply_step(plan, [9, 9], None, fair, BlockManager(4, 2))
    # tenant a: its 2-token prompt (1 each) and one output token (2); tenant b: one output token
    assert fair._counter == {"a": 4.0, "b": 2.0}
