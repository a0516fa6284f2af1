"""A prompt kept as its `range` (`engines.sequence.Tokens`, the simulator's stand-ins) reads as the list of its
tokens would: the same values, the same block hashes, the same block manager through a preemption, and the same
run, byte for byte, with shared prefixes (the hashes on)."""

from __future__ import annotations

import random

import pytest

from engines.api import Request
from engines.block_manager import BlockManager
from engines.sequence import Sequence, Tokens
from harness.loadgen import Scheduled
from tests.engines.test_block_keys import admit, simulate, state


def test_tokens_read_like_the_list() -> None:
    rng = random.Random(7)
    for trial in range(200):
        start = rng.choice([0, 3, trial << 40])
        prompt = range(start, start + rng.randint(1, 40))
        lazy, listed = Tokens(prompt), list(prompt)
        for _ in range(30):
            op = rng.random()
            if op < 0.3:
                token = rng.choice([0, 7, 1 << 41])
                lazy.append(token)
                listed.append(token)
            elif op < 0.4:
                extra = [0] * rng.randint(0, 5)
                lazy.extend(extra)
                listed.extend(extra)
            elif op < 0.5 and len(listed) > 1:
                assert lazy.pop() == listed.pop()
            n = len(listed)
            assert len(lazy) == n and bool(lazy) and lazy == listed and list(lazy) == listed
            i = rng.randint(-n, n - 1)
            assert lazy[i] == listed[i] and lazy[0] == listed[0] and lazy[-1] == listed[-1]
            a, b = rng.randint(-n - 2, n + 2), rng.randint(-n - 2, n + 2)
            assert lazy[a:b] == listed[a:b] and lazy[a:] == listed[a:] and lazy[:b] == listed[:b]
            assert lazy[a:b:2] == listed[a:b:2] and type(lazy[a:b]) is list
        with pytest.raises(IndexError):
            lazy[len(listed)]
        with pytest.raises(IndexError):
            lazy[-len(listed) - 1]


def test_only_a_range_prompt_is_kept_lazily() -> None:
    assert type(Sequence.from_request(Request("a", range(5, 9), 3), 0, 0.0).token_ids) is Tokens
    assert type(Sequence.from_request(Request("b", [5, 6, 7, 8], 3), 1, 0.0).token_ids) is list
    assert type(Sequence.from_request(Request("c", range(5, 9, 2), 3), 2, 0.0).token_ids) is list


@pytest.mark.parametrize("block_size", [1, 2, 4])
def test_a_lazy_and_a_listed_prompt_hash_alike_and_keep_the_same_blocks_through_a_preemption(
    block_size: int,
) -> None:
    prompt = range(9 << 40, (9 << 40) + 23)
    managers = (BlockManager(40, block_size, prefix_caching=True), BlockManager(40, block_size, prefix_caching=True))
    seqs = []
    for blocks, ids in zip(managers, (prompt, list(prompt)), strict=True):
        blocks.keys_without_hashes = False  # hash every block, as when two prompts share a first token
        blocks.reset()
        seqs.append(Sequence.from_request(Request("r", ids, 40), 0, 0.0))
    assert type(seqs[0].token_ids) is Tokens and type(seqs[1].token_ids) is list
    for blocks, seq in zip(managers, seqs, strict=True):
        assert admit(blocks, seq) == 0
        for token in (0, 5, 0, 0, 1 << 45, 0, 0):  # decode: one token a step, each block committed once full
            seq.append_token(token)
            blocks.allocate(seq, blocks.blocks_for_tokens(seq.num_tokens) - len(seq.block_table))
            seq.num_computed_tokens = seq.num_tokens
            blocks.commit(seq)
        blocks.free(seq)  # preempted: its blocks cached, to be found again
        seq.block_table, seq.num_committed_blocks, seq.num_computed_tokens = [], 0, 0
    assert seqs[0].block_hashes == seqs[1].block_hashes and seqs[0].block_hashes
    assert state(managers[0], seqs[:1]) == state(managers[1], seqs[1:])
    hits = [admit(blocks, seq) for blocks, seq in zip(managers, seqs, strict=True)]
    assert hits[0] == hits[1] and hits[0]  # resumed, it found its own blocks by their hashes
    assert seqs[0].block_hashes == seqs[1].block_hashes
    assert state(managers[0], seqs[:1]) == state(managers[1], seqs[1:])


def shared_ranges(listed: bool) -> list[Scheduled]:
    """Prompts that are prefixes of one another (one first token: the hashes turn on), as ranges or as lists."""
    prompts = [range(5 << 40, (5 << 40) + 64 + 16 + 37 * (i % 7)) for i in range(48)]
    return [
        Scheduled(Request(f"r{i}", list(p) if listed else p, 30, ignore_eos=True), 0.02 * (i // 6))
        for i, p in enumerate(prompts)
    ]


def test_a_run_with_shared_prefixes_is_the_same_with_lazy_and_listed_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    records, steps, hits, blocks = simulate(shared_ranges(False), True, monkeypatch)
    assert blocks._by_first is None and blocks._cached  # the hashes came on
    assert len(hits) >= 40 and b'"preempt"' in steps
    assert (records, steps, hits) == simulate(shared_ranges(True), True, monkeypatch)[:3]
