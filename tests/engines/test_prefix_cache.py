"""Prefix caching: the block manager's bookkeeping under random add / fork / free / evict (a hypothesis
state machine that also tracks what every block really holds), and engines that reuse prefixes still
decode exactly what an uncached reference decodes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engines.api import Request
from engines.block_manager import BlockManager
from engines.inprocess import EngineOptions, KVConfig
from engines.scheduler import ContinuousConfig
from engines.sequence import Sequence
from engines.static_scheduler import StaticConfig
from tests.engines.helpers import reference_greedy, run_engine

BS = 4


class PrefixCacheMachine(RuleBasedStateMachine):
    """Sequences are admitted as the schedulers admit them (match, take, allocate), compute their tokens
    (each write recorded in `content`), commit, and are freed. A tiny alphabet makes prefixes collide."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = BlockManager(12, BS, prefix_caching=True)
        self.live: list[Sequence] = []
        self.content: dict[int, tuple[int, ...]] = {}  # block -> the tokens (and all before them) it holds
        self.n = 0

    def _admit(self, tokens: list[int]) -> None:
        seq = Sequence.from_request(Request(f"s{self.n}", tokens, 1), self.n, 0.0)
        self.n += 1
        hit = self.blocks.match_prefix(seq)
        need = self.blocks.blocks_for_tokens(len(tokens)) - len(hit)
        if not self.blocks.can_allocate(need + self.blocks.reactivated(hit)):
            return
        self.blocks.take_prefix(seq, hit)
        for i, block in enumerate(hit):  # what is reused really holds this sequence's tokens
            assert self.content[block] == tuple(tokens[: (i + 1) * BS])
        self.blocks.allocate(seq, need)
        for i in range(len(hit), len(seq.block_table)):  # compute the rest: the KV writes
            self.content[seq.block_table[i]] = tuple(tokens[: (i + 1) * BS])
        seq.num_computed_tokens = len(tokens)
        self.blocks.commit(seq)
        self.live.append(seq)

    @rule(tokens=st.lists(st.integers(0, 2), min_size=1, max_size=14))
    def add(self, tokens: list[int]) -> None:
        self._admit(tokens)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), extra=st.lists(st.integers(0, 2), max_size=6))
    def fork(self, data: st.DataObject, extra: list[int]) -> None:
        parent = data.draw(st.sampled_from(self.live))
        cut = data.draw(st.integers(1, parent.num_tokens))
        self._admit(parent.token_ids[:cut] + extra)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        seq = data.draw(st.sampled_from(self.live))
        self.live.remove(seq)
        self.blocks.free(seq)

    @rule()
    def evict_under_pressure(self) -> None:  # a sequence taking every free block: unreferenced cached ones are evicted
        free = self.blocks.num_free
        if free:
            self._admit([3] * (free * BS))  # token 3 is outside the alphabet of the other rules

    @rule()
    def reset(self) -> None:
        self.blocks.reset()

    @invariant()
    def referenced_blocks_are_counted_and_never_free(self) -> None:
        held: dict[int, int] = {}
        for seq in self.live:
            for block in seq.block_table:
                held[block] = held.get(block, 0) + 1
        assert self.blocks.refcounts() == held
        assert self.blocks.num_used == len(held)
        evictable = self.blocks.evictable()
        assert len(evictable) == len(set(evictable)) == self.blocks.num_free - len(self.blocks._free)
        free = set(self.blocks._free) | set(evictable)
        assert not free & set(held), "a referenced block is free"
        assert len(free) + len(held) == self.blocks.num_blocks
        assert len(self.blocks._free) == len(set(self.blocks._free))
        assert len(self.blocks._lru) <= 2 * self.blocks.num_blocks

    @invariant()
    def every_cached_hash_names_what_its_block_holds(self) -> None:
        for h, block in self.blocks._cached.items():
            tokens = self.content[block]
            parent = None
            for i in range(0, len(tokens), BS):
                parent = hash((parent, tokens[i : i + BS]))
            assert parent == h


TestPrefixCacheMachine = PrefixCacheMachine.TestCase
TestPrefixCacheMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


def test_a_prompt_never_matches_whole_and_off_matches_nothing() -> None:
    blocks = BlockManager(8, BS, prefix_caching=True)
    first = Sequence.from_request(Request("a", list(range(8)), 1), 0, 0.0)
    blocks.allocate(first, 2)
    first.num_computed_tokens = 8
    blocks.commit(first)
    blocks.free(first)
    same = Sequence.from_request(Request("b", list(range(8)), 1), 1, 0.0)
    assert len(blocks.match_prefix(same)) == 1  # the last token is left to compute: it yields the next one
    longer = Sequence.from_request(Request("c", list(range(9)), 1), 2, 0.0)
    assert len(blocks.match_prefix(longer)) == 2
    assert BlockManager(8, BS).match_prefix(longer) == []


def test_a_block_taken_back_by_a_hit_leaves_the_lru_until_freed_again() -> None:
    blocks = BlockManager(3, BS, prefix_caching=True)

    def sequence(name: str, tokens: list[int]) -> Sequence:
        return Sequence.from_request(Request(name, tokens, 1), 0, 0.0)

    def computed(name: str, tokens: list[int]) -> Sequence:
        seq = sequence(name, tokens)
        hit = blocks.match_prefix(seq)
        blocks.take_prefix(seq, hit)
        blocks.allocate(seq, blocks.blocks_for_tokens(len(tokens)) - len(hit))
        seq.num_computed_tokens = len(tokens)
        blocks.commit(seq)
        return seq

    a, b = computed("a", [1] * BS), computed("b", [2] * BS)
    (block_a,), (block_b,) = a.block_table, b.block_table
    blocks.free(a)
    blocks.free(b)
    assert blocks.evictable() == [block_a, block_b] and blocks.num_free == 3
    again = computed("a2", [1] * BS + [5])  # takes block_a back from the LRU, and the never-cached block
    assert again.block_table[0] == block_a and blocks.evictable() == [block_b] and blocks.num_free == 1
    blocks.free(again)  # block_a is now the most recently used; its first entry in the LRU is stale
    assert blocks.evictable() == [block_b, block_a] and blocks.num_free == 3
    taker = computed("c", [3] * 2 * BS)  # the never-cached block, then the least recently used: block_b
    assert block_b in taker.block_table and block_a not in taker.block_table
    assert blocks.evictable() == [block_a] and blocks.num_free == 1 and blocks.evictions == 1
    assert blocks.match_prefix(sequence("b2", [2] * BS + [9])) == []  # block_b's hash is forgotten
    assert blocks.match_prefix(sequence("a3", [1] * BS + [9])) == [block_a]


def test_recurring_hits_with_nothing_evicted_leave_no_pile_of_stale_lru_entries() -> None:
    blocks = BlockManager(4, BS, prefix_caching=True)
    first = Sequence.from_request(Request("a", [1] * BS, 1), 0, 0.0)
    blocks.allocate(first, 1)
    first.num_computed_tokens = BS
    blocks.commit(first)
    (block,) = first.block_table
    blocks.free(first)
    for n in range(50):  # each turn takes the cached block back and frees it: one stale entry more, unless dropped
        seq = Sequence.from_request(Request(f"t{n}", [1] * BS + [n], 1), n + 1, 0.0)
        hit = blocks.match_prefix(seq)
        assert hit == [block]
        blocks.take_prefix(seq, hit)
        blocks.allocate(seq, 1)
        blocks.free(seq)
        assert blocks.evictable() == [block] and blocks.num_free == 4 and blocks.evictions == 0
        assert len(blocks._lru) <= 2 * blocks.num_blocks


def shared_prefix_requests(vocab: int, seed: int = 3) -> list[Request]:
    """Three system prompts of 40 tokens, each opening several requests with their own tails."""
    rng = np.random.default_rng(seed)
    systems = [rng.integers(3, vocab, 40).tolist() for _ in range(3)]
    requests = []
    for i in range(12):
        tail = rng.integers(3, vocab, int(rng.integers(1, 30))).tolist()
        requests.append(Request(f"p{i:02d}", systems[i % 3] + tail, int(rng.integers(2, 12)), ignore_eos=True))
    return requests


@pytest.fixture(scope="module")
def shared_and_reference(embedded):
    requests = shared_prefix_requests(embedded.model.config.vocab_size)
    reference = {
        r.request_id: reference_greedy(embedded.model, list(r.prompt_token_ids), r.max_tokens) for r in requests
    }
    return requests, reference


@pytest.mark.parametrize(
    "options",
    [
        EngineOptions(kind="continuous", kv=KVConfig(blocks=40), continuous=ContinuousConfig(max_running=2)),
        EngineOptions(kind="static", kv=KVConfig(blocks=60), static=StaticConfig(max_batch=3)),
    ],
    ids=["continuous", "static"],
)
def test_reused_prefixes_decode_as_the_uncached_reference(embedded, shared_and_reference, options) -> None:
    requests, reference = shared_and_reference
    run = run_engine(embedded, options, requests)
    assert run.tokens_by_request == reference
    cached = sum(step["prefix_cached_tokens"] for step in run.steps)
    admitted_cached = [d["cached"] for step in run.steps for d in step["decisions"] if d["action"] == "admit"]
    assert cached == sum(admitted_cached) > 0  # the cache was really used, and each admission says how much
    assert all(c % 16 == 0 for c in admitted_cached)
    computed = sum(step["prefill_tokens"] for step in run.steps)
    prompts = sum(len(r.prompt_token_ids) for r in requests)
    assert computed + cached == prompts  # cached prompt tokens were not computed (nothing was preempted)


def test_prefix_caching_off_computes_every_prompt_token(embedded, shared_and_reference) -> None:
    requests, reference = shared_and_reference
    options = EngineOptions(
        kind="continuous", kv=KVConfig(blocks=40, prefix_caching=False), continuous=ContinuousConfig(max_running=2)
    )
    run = run_engine(embedded, options, requests)
    assert run.tokens_by_request == reference
    assert sum(step["prefix_cached_tokens"] for step in run.steps) == 0
    assert sum(step["prefill_tokens"] for step in run.steps) == sum(len(r.prompt_token_ids) for r in requests)
