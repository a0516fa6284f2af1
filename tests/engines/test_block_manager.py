"""Property tests: random add / step / finish / abort / preempt never leak or double-allocate a block,
and every admitted request finishes or is aborted."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.api import Request
from engines.block_manager import BlockManager
from engines.policy import POLICIES, make_policy
from engines.scheduler import ContinuousConfig, ContinuousScheduler
from engines.sequence import Sequence, SequenceStatus
from engines.static_scheduler import StaticConfig, StaticScheduler


def check_blocks(blocks: BlockManager, sequences: list[Sequence]) -> None:
    owned = [b for seq in sequences for b in seq.block_table]
    assert len(owned) == len(set(owned)), "a block is held by two sequences"
    assert blocks.num_used == len(owned), "blocks leaked or were lost"
    assert set(blocks.refcounts()) == set(owned)
    assert all(0 <= b < blocks.num_blocks for b in owned)


def test_block_manager_refuses_double_free():
    blocks = BlockManager(4, 2)
    seq = Sequence.from_request(Request("a", [1, 2, 3], 2), 0, 0.0)
    blocks.allocate(seq, 2)
    stolen = list(seq.block_table)
    blocks.free(seq)
    other = Sequence.from_request(Request("b", [1], 1), 1, 0.0)
    other.block_table = stolen
    with pytest.raises(RuntimeError):
        blocks.free(other)
    with pytest.raises(RuntimeError):
        blocks.allocate(seq, 5)


operations = st.lists(
    st.tuples(st.sampled_from(["add", "step", "step", "step", "abort"]), st.integers(0, 10**6)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(
    ops=operations,
    kind=st.sampled_from(["continuous", "static"]),
    policy=st.sampled_from(sorted(POLICIES)),
    num_blocks=st.integers(6, 40),
    block_size=st.sampled_from([1, 2, 4]),
    max_running=st.integers(1, 6),
    budget=st.integers(4, 64),
)
def test_scheduler_never_leaks_and_every_request_ends(ops, kind, policy, num_blocks, block_size, max_running, budget):
    blocks = BlockManager(num_blocks, block_size)
    if kind == "continuous":
        config = ContinuousConfig(max_running=max_running, max_batched_tokens=budget)
        scheduler = ContinuousScheduler(config, make_policy(policy), blocks, eos=1)
    else:
        scheduler = StaticScheduler(StaticConfig(max_running, batch_timeout_s=0.0), make_policy(policy), blocks, eos=1)
    rng = random.Random(len(ops))
    sequences: list[Sequence] = []
    ended: set[str] = set()
    now = 0.0

    def step() -> None:
        nonlocal now
        now += 1.0
        plan = scheduler.schedule(now)
        if kind == "continuous":
            assert plan.num_tokens <= budget
            assert len({id(c.seq) for c in plan.chunks}) == len(plan.chunks) <= max_running
        sampled = [rng.choice([1, 5, 6, 7]) for c in plan.chunks if c.yields_token and c.num_tokens]
        for seq in scheduler.remove_finished(plan, sampled):
            ended.add(seq.request_id)
        check_blocks(blocks, [s for s in sequences if s.status is not SequenceStatus.FINISHED or s.block_table])

    for op, value in ops:
        if op == "add":
            capacity = num_blocks * block_size
            prompt = 1 + value % max(1, capacity // 3)
            max_tokens = 1 + value % max(1, capacity - prompt) if capacity > prompt else 1
            request = Request(
                f"r{len(sequences)}", [3] * prompt, max_tokens, tenant=f"t{value % 3}", priority=value % 2
            )
            seq = Sequence.from_request(request, len(sequences), now)
            if blocks.blocks_for_tokens(seq.max_total_tokens) <= num_blocks:  # engines reject larger ones
                sequences.append(seq)
                scheduler.enqueue(seq)
        elif op == "abort" and sequences:
            target = sequences[value % len(sequences)]
            if scheduler.abort(target.request_id) is not None:
                ended.add(target.request_id)
        else:
            step()
    for _ in range(20_000):  # drain: everything admitted must end
        if not scheduler.has_work():
            break
        step()
    assert not scheduler.has_work(), "the scheduler stalled with work left"
    assert ended == {s.request_id for s in sequences}
    assert all(s.status is SequenceStatus.FINISHED for s in sequences)
    assert blocks.num_used == 0 and blocks.num_free == num_blocks
