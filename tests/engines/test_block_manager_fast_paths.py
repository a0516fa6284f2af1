"""The block manager's fast paths (a one-block allocate, with its one-block eviction, and a one-block commit)
against its generic loops, the ones every call took before: random sequences with shared prefixes (so hits,
stale LRU entries and shared blocks occur) driven through both, the whole state compared after every call."""

from __future__ import annotations

import random

import pytest

from engines.api import Request
from engines.block_manager import BlockManager
from engines.sequence import Sequence


class GenericBlockManager(BlockManager):
    """Every call through the generic loops (the block manager before its fast paths)."""

    def allocate(self, seq: Sequence, num_blocks: int) -> None:
        if not num_blocks:
            return
        free, table, refs = self._free, seq.block_table, self._refs
        if num_blocks > len(free) + self._num_evictable:
            raise RuntimeError(f"{seq.request_id}: asked for {num_blocks} blocks, {self.num_free} free")
        fresh = min(num_blocks, len(free))
        for _ in range(fresh):
            block = free.pop()
            refs[block] = 1
            table.append(block)
        if fresh < num_blocks:
            self._evict(num_blocks - fresh, table)

    def _evict(self, num_blocks: int, table: list[int]) -> None:
        pop, entries, refs = self._lru.popleft, self._lru_entries, self._refs
        hash_of, cached = self._hash_of, self._cached
        taken = 0
        while taken < num_blocks:
            block = pop()
            left = entries[block] - 1
            entries[block] = left
            if left or refs[block]:
                continue
            del cached[hash_of[block]]  # type: ignore[index]
            hash_of[block] = None
            refs[block] = 1
            table.append(block)
            taken += 1
        self._num_evictable -= num_blocks
        self.evictions += num_blocks

    def free(self, seq: Sequence) -> None:
        refs, table = self._refs, seq.block_table
        if not all(map(refs.__getitem__, table)):
            raise RuntimeError(f"{seq.request_id}: freed a block it does not hold")
        hash_of, pool, lru, entries = self._hash_of, self._free, self._lru, self._lru_entries
        cached = 0
        for block in reversed(table):
            count = refs[block] - 1
            refs[block] = count
            if not count:
                if hash_of[block] is None:
                    pool.append(block)
                else:
                    lru.append(block)
                    entries[block] += 1
                    cached += 1
        self._num_evictable += cached
        table.clear()
        seq.num_committed_blocks = 0
        if len(lru) > 2 * self.num_blocks:
            self._compact_lru()

    def commit(self, seq: Sequence) -> None:
        done = seq.num_computed_tokens // self.block_size
        first = seq.num_committed_blocks
        if done <= first or not self.prefix_caching:
            return
        cached, hash_of = self._cached, self._hash_of
        for h, block in zip(self.hashes(seq, done)[first:done], seq.block_table[first:done], strict=True):
            if h not in cached and hash_of[block] is None:
                cached[h] = block
                hash_of[block] = h
        seq.num_committed_blocks = done


def state(blocks: BlockManager, sequences: list[Sequence]) -> tuple:
    return (
        blocks._free,
        blocks._refs,
        blocks._hash_of,
        sorted(blocks._cached.items()),
        list(blocks._lru),
        blocks._lru_entries,
        blocks._num_evictable,
        blocks.evictions,
        blocks.evictable(),
        [(s.block_table, s.block_hashes, s.num_committed_blocks, s.num_computed_tokens) for s in sequences],
    )


def drive(manager: type[BlockManager], seed: int, num_blocks: int, bs: int) -> list[tuple]:
    """Random admissions (prefix hit taken), growth a token or a chunk at a time, commits, frees and resets."""
    rng = random.Random(seed)
    blocks = manager(num_blocks, bs, prefix_caching=True)
    prefixes = [[rng.randrange(5) for _ in range(rng.randrange(1, 4 * bs))] for _ in range(3)]
    live: list[Sequence] = []
    done: list[Sequence] = []
    states = []
    for n in range(400):
        op = rng.random()
        if op < 0.3 or not live:
            tail = [rng.randrange(5) for _ in range(rng.randrange(1, 3 * bs))]
            seq = Sequence.from_request(Request(f"r{n}", rng.choice(prefixes) + tail, 1), n, 0.0)
            hit = blocks.match_prefix(seq)
            need = blocks.blocks_for_tokens(seq.num_tokens) - len(hit)
            if blocks.can_allocate(need + blocks.reactivated(hit)):
                blocks.take_prefix(seq, hit)
                blocks.allocate(seq, need)
                seq.num_computed_tokens = seq.num_tokens - rng.randrange(2)  # the prompt, or all but its last token
                blocks.commit(seq)
                live.append(seq)
        elif op < 0.75:
            seq = rng.choice(live)
            grow = 1 if rng.random() < 0.7 else rng.randrange(1, 3 * bs)
            seq.token_ids.extend(rng.randrange(5) for _ in range(grow))
            need = blocks.blocks_needed(seq, seq.num_tokens - seq.num_computed_tokens)
            if blocks.can_allocate(need):
                blocks.allocate(seq, need)
                seq.num_computed_tokens = seq.num_tokens
                blocks.commit(seq)
            else:
                del seq.token_ids[-grow:]
        elif op < 0.98:
            seq = live.pop(rng.randrange(len(live)))
            blocks.free(seq)
            done.append(seq)
        else:
            blocks.reset()
        states.append(state(blocks, live + done))
    return states


@pytest.mark.parametrize("seed", range(40))
def test_the_fast_paths_leave_the_state_the_generic_loops_leave(seed: int) -> None:
    num_blocks, bs = [(8, 4), (24, 4), (64, 8), (12, 2)][seed % 4]
    fast, generic = drive(BlockManager, seed, num_blocks, bs), drive(GenericBlockManager, seed, num_blocks, bs)
    assert len(fast) == len(generic)
    for i, (a, b) in enumerate(zip(fast, generic, strict=True)):
        assert a == b, f"call {i}"


def test_the_random_calls_reach_every_fast_path_and_its_fallback() -> None:
    """The drive above does reach each path: one-block evictions, evictions of several blocks with and without
    stale LRU entries, frees with and without shared blocks, and one-block and several-block commits."""
    seen: dict[str, int] = {}

    class Counting(BlockManager):
        def _evict_one(self) -> int:
            seen["evict_one"] = seen.get("evict_one", 0) + 1
            return super()._evict_one()

        def _evict(self, num_blocks: int, table: list[int]) -> None:
            key = "evict_clean" if len(self._lru) == self._num_evictable else "evict_stale"
            seen[key] = seen.get(key, 0) + 1
            super()._evict(num_blocks, table)

        def free(self, seq: Sequence) -> None:
            key = "free_shared" if any(self._refs[b] > 1 for b in seq.block_table) else "free_alone"
            seen[key] = seen.get(key, 0) + 1
            super().free(seq)

        def commit(self, seq: Sequence) -> None:
            n = seq.num_computed_tokens // self.block_size - seq.num_committed_blocks
            key = "commit_one" if n == 1 else "commit_many" if n > 1 else "commit_none"
            seen[key] = seen.get(key, 0) + 1
            super().commit(seq)

    for seed in range(40):
        num_blocks, bs = [(8, 4), (24, 4), (64, 8), (12, 2)][seed % 4]
        drive(Counting, seed, num_blocks, bs)
    for key in ("evict_one", "evict_clean", "evict_stale", "free_shared", "free_alone", "commit_one", "commit_many"):
        assert seen.get(key, 0) > 10, (key, seen)
