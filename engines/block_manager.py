"""KV-cache block manager: a fixed pool of fixed-size blocks, handed to sequences as they grow, and
(with prefix caching) kept after use so a later sequence with the same leading tokens reuses them.

The pool's size comes from a memory budget, so admission is governed by real capacity: a sequence is
admitted only when blocks for its next chunk exist, and a running sequence that needs a block when
none is free forces a preemption. Free blocks are a stack: the block freed last is handed out first,
so the blocks in use stay few and close together (still in cache, on pages the TLB knows) instead of
cycling through the whole pool as a FIFO would.

Prefix caching (vLLM's automatic prefix caching, block by block): a FULL block of computed tokens is
named by a hash chained through its predecessors (`block_hash(parent, tokens)`), so one hash stands for
the whole prefix up to and including that block. Blocks are reference-counted; a block whose count
falls to 0 keeps its keys and values and its hash, and waits in LRU order. A new sequence takes the
longest run of its leading blocks found by hash (`match_prefix`) and computes only the rest. When no
never-cached block is left, the least recently used unreferenced cached block is evicted (its hash
forgotten) and handed out. A block is never handed out while a sequence references it.

Keys without hashes: a block's hash stands for a prefix, and two sequences whose first tokens differ share
no prefix, so no block of one can ever be found by the other (distinct stand-in prompts: every block of a
simulated hour, 1.6 million, hashed, put in the dict and evicted from it, and not one hit). Until two
sequences with the same first token are seen, a cached block is named by its (sequence, position) pair
instead (`_hash_of` holds the sequence's entry, `_pos` the position; the entry lists the blocks the
sequence committed, so where its keys are, and goes with its last key): the same blocks are cached, kept
and found (a preempted sequence resuming finds its own), with no hash and no dict entry. The first such
pair seen (by `match_prefix` or `commit`) turns the hashes on for good (until `reset`): every key held is
hashed then (`_hash_keys`).

Ranges while keyed: no named block is shared then (only the commit of the one sequence holding a block names
it, and only that sequence's prefix hit takes it back), so a sequence's cached blocks travel together: `free`
puts them in the LRU as one segment (engines/block_segments.py), `_evict` hands them out in slices from the
oldest segment, and `commit` appends a sequence's new keys in one go. Hashing keeps a block per LRU entry,
as before. The blocks, their order and every count are the same either way (tests/engines/test_block_segments.py
drives both against the per-block manager).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence as Tokens
from typing import Any

from engines.block_segments import SegmentLRU
from engines.sequence import Sequence


def blocks_for_budget(budget_bytes: int, bytes_per_token: int, block_size: int) -> int:
    return max(0, budget_bytes // (bytes_per_token * block_size))


def block_hash(parent: int | None, tokens: Tokens[int]) -> int:
    """The name of a full block: its tokens and, through `parent`, every token before them."""
    return hash((parent, tuple(tokens)))


class BlockManager:
    """A fixed pool of `num_blocks` KV blocks of `block_size` tokens, reference-counted; with
    `prefix_caching`, full blocks stay findable by their chained hash until evicted (LRU)."""

    keys_without_hashes = True  # False: every committed block hashed from the start (the module's note)

    def __init__(self, num_blocks: int, block_size: int, prefix_caching: bool = False) -> None:
        if num_blocks <= 0 or block_size <= 0:
            raise ValueError(f"need positive num_blocks and block_size, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self._free: list[int] = list(range(num_blocks - 1, -1, -1))  # never cached (or reset): pop() gives 0 first
        # Per-block state in lists indexed by block (a struct of arrays): cheaper to read and write than dicts,
        # and a simulated hour touches two million blocks.
        self._refs: list[int] = [0] * num_blocks  # sequences referencing each block
        self._hash_of: list[Any] = [None] * num_blocks  # each cached block's hash (or its sequence's entry)
        self._cached: dict[int, int] = {}  # hash -> block holding that prefix block
        # The LRU of cached, unreferenced blocks, least recent first. A block taken back by a prefix hit stays
        # in the deque and is skipped when reached (its `_lru_entries` says whether a later entry exists): an
        # OrderedDict's unlink costs several times a deque's append and popleft.
        self._lru: deque[int] = deque()
        self._lru_entries: list[int] = [0] * num_blocks  # entries of each block in `_lru`, live or stale
        self._segments = SegmentLRU()  # the LRU while keyed (the module's note); `_lru` is empty then
        self._num_evictable = 0
        self.evictions = 0
        # keys without hashes (the module's note): first token -> (its sequence, the block of each position it
        # committed), and each keyed block's position; hashes from the first first token two sequences share
        # an entry is [sequence, its blocks by position, how many of them hold its keys, its segments in the LRU]:
        # dropped with its last key
        self._by_first: dict[int, list[Any]] | None = {} if self.keys_without_hashes else None
        self._pos: list[int] = [0] * num_blocks
        self._num_keys = 0  # blocks keyed by (sequence, position)

    @property
    def num_free(self) -> int:
        """Blocks that can be handed out now: never-cached ones and unreferenced cached ones."""
        return len(self._free) + self._num_evictable

    @property
    def num_used(self) -> int:
        """Blocks some sequence references."""
        return self.num_blocks - self.num_free

    @property
    def num_cached(self) -> int:
        """Blocks findable by hash (referenced or not)."""
        return len(self._cached) + self._num_keys

    def blocks_for_tokens(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def blocks_needed(self, seq: Sequence, num_new_tokens: int) -> int:
        """Extra blocks `seq` needs to hold `num_new_tokens` more computed tokens."""
        extra = -(-(seq.num_computed_tokens + num_new_tokens) // self.block_size) - len(seq.block_table)
        return extra if extra > 0 else 0

    def can_allocate(self, num_blocks: int) -> bool:
        """Whether `num_blocks` can be handed out now."""
        return num_blocks <= len(self._free) + self._num_evictable

    def allocate(self, seq: Sequence, num_blocks: int) -> None:
        """Append `num_blocks` blocks to `seq`'s block table, evicting cached ones when none is free."""
        if not num_blocks:  # most calls: a decode step that stays inside its last block
            return
        free, table, refs = self._free, seq.block_table, self._refs
        if num_blocks > len(free) + self._num_evictable:
            raise RuntimeError(f"{seq.request_id}: asked for {num_blocks} blocks, {self.num_free} free")
        fresh = min(num_blocks, len(free))
        for _ in range(fresh):  # a stack: the block freed last is handed out first, so blocks in use stay cache-warm
            block = free.pop()
            refs[block] = 1
            table.append(block)
        if fresh < num_blocks:  # then the least recently used cached ones: a long run's pool is all cache
            if self._by_first is None:
                self._evict(num_blocks - fresh, table)
            else:
                self._evict_keyed(num_blocks - fresh, table)

    def _evict(self, num_blocks: int, table: list[int]) -> None:
        """Append the `num_blocks` least recently used unreferenced cached blocks to `table`, their hashes
        forgotten."""
        pop, entries, refs = self._lru.popleft, self._lru_entries, self._refs
        hash_of, cached = self._hash_of, self._cached
        taken = 0
        while taken < num_blocks:
            block = pop()
            left = entries[block] - 1
            entries[block] = left
            if left or refs[block]:
                continue  # stale: taken back by a prefix hit (and maybe freed again, further back in the LRU)
            del cached[hash_of[block]]
            hash_of[block] = None
            refs[block] = 1
            table.append(block)
            taken += 1
        self._num_evictable -= num_blocks
        self.evictions += num_blocks

    def _evict_keyed(self, num_blocks: int, table: list[int]) -> None:
        """`_evict` while keyed: the blocks sliced from the oldest segments, no dict entry to drop."""
        hash_of, refs, pop_front = self._hash_of, self._refs, self._segments.pop_front
        left = num_blocks
        while left:
            entry, taken = pop_front(left)
            for block in taken:
                hash_of[block] = None
                refs[block] = 1
            table.extend(taken)
            left -= len(taken)
            entry[2] -= len(taken)
            if not entry[2]:  # its last key gone: nothing of it to find, its tokens not kept
                self._drop(entry)
        self._num_evictable -= num_blocks
        self.evictions += num_blocks
        self._num_keys -= num_blocks

    def free(self, seq: Sequence) -> None:
        """Release every block `seq` holds: back to the pool, or (cached) to the LRU list."""
        refs, table = self._refs, seq.block_table
        if not all(map(refs.__getitem__, table)):
            block = next(b for b in table if not refs[b])
            raise RuntimeError(f"{seq.request_id}: block {block} freed by a sequence that does not hold it")
        if self._by_first is not None:
            self._free_keyed(table)
            seq.num_committed_blocks = 0
            return
        hash_of, pool, lru, entries = self._hash_of, self._free, self._lru, self._lru_entries
        cached = 0
        # the tail first: a sequence's last blocks are the least likely to be shared, so they are evicted first
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
        if len(lru) > 2 * self.num_blocks:  # stale entries pile up when prefix hits recur and nothing is evicted
            self._compact_lru()

    def _free_keyed(self, table: list[int]) -> None:
        """`free` while keyed: the cached blocks it releases are all keyed to `seq`'s entry (a block is keyed by
        the commit of the one sequence holding it), so they go to the LRU as one segment, the tail first as in
        `free`. (Blocks shared before a reset are shared still, but keyed to no one.)"""
        refs, hash_of = self._refs, self._hash_of
        for block in table:
            refs[block] -= 1
        backwards = table[::-1]
        cached = [block for block in backwards if hash_of[block] is not None and not refs[block]]
        if len(cached) < len(backwards):
            self._free.extend([block for block in backwards if hash_of[block] is None and not refs[block]])
        if cached:
            self._segments.push(hash_of[cached[0]], cached)
            self._num_evictable += len(cached)
        table.clear()

    def _compact_lru(self) -> None:
        """Drop the LRU's stale entries (at most once per `num_blocks` frees to it: amortised, a constant)."""
        live = self.evictable()
        self._lru = deque(live)
        self._lru_entries = [0] * self.num_blocks
        for block in live:
            self._lru_entries[block] = 1

    def evictable(self) -> list[int]:
        """The cached blocks no sequence references, least recently used first."""
        if self._by_first is not None:
            return self._segments.blocks()
        refs, last = self._refs, {block: i for i, block in enumerate(self._lru)}  # a block's last entry is its live one
        return [block for i, block in enumerate(self._lru) if last[block] == i and not refs[block]]

    # -- prefix caching ------------------------------------------------------------------------
    def hashes(self, seq: Sequence, num_blocks: int) -> list[int]:
        """The chained hashes of `seq`'s first `num_blocks` full blocks of tokens (kept on the sequence)."""
        known, bs, tokens = seq.block_hashes, self.block_size, seq.token_ids
        parent = known[-1] if known else None
        window = tuple(tokens[len(known) * bs : num_blocks * bs])  # one copy: each block is a slice of it
        for start in range(0, len(window), bs):
            parent = hash((parent, window[start : start + bs]))  # `block_hash`, inline: millions an hour
            known.append(parent)
        return known

    def match_prefix(self, seq: Sequence) -> list[int]:
        """Cached blocks holding `seq`'s leading tokens, longest run first-to-last. The last token is always
        left to compute (its logits give the next token), so a prompt never matches whole."""
        if not self.prefix_caching or seq.block_table:
            return []
        limit = (seq.num_tokens - 1) // self.block_size
        found: list[int] = []
        entry = self._entry(seq)
        if entry is not None:  # only its own blocks can hold its prefix (each position as far as `hashes` has it)
            hash_of, pos = self._hash_of, self._pos
            for i, block in enumerate(entry[1]):
                if hash_of[block] is not entry or pos[block] != i:
                    break
                found.append(block)
            return found
        cached = self._cached
        for h in self.hashes(seq, limit):
            block = cached.get(h)
            if block is None:
                break
            found.append(block)
        return found

    def reactivated(self, blocks: list[int]) -> int:
        """How many of `blocks` no sequence references now: taking them uses up free capacity."""
        refs = self._refs
        return sum(1 for b in blocks if not refs[b])  # a matched block is cached: unreferenced means in the LRU

    def take_prefix(self, seq: Sequence, blocks: list[int]) -> None:
        """Give `seq` the matched `blocks` as its first blocks: their tokens count as computed."""
        refs, back = self._refs, []
        for block in blocks:
            if not refs[block]:
                self._num_evictable -= 1  # out of the LRU: its entry there is now stale
                back.append(block)
            refs[block] += 1
        if back and self._by_first is not None:  # out of its segments at once: no stale entries while keyed
            for entry in {id(entry): entry for entry in map(self._hash_of.__getitem__, back)}.values():
                self._segments.take_back(entry, refs)
        seq.block_table.extend(blocks)
        seq.num_committed_blocks = len(blocks)
        seq.num_computed_tokens = len(blocks) * self.block_size

    def commit(self, seq: Sequence) -> None:
        """Make `seq`'s newly completed full blocks findable by hash (after the step that computed them).
        A block whose prefix is already cached elsewhere (two sequences computed it at once) stays private."""
        done = seq.num_computed_tokens // self.block_size
        first = seq.num_committed_blocks
        if done <= first or not self.prefix_caching:
            return
        cached, hash_of = self._cached, self._hash_of
        entry = self._entry(seq)
        if entry is not None:  # keyed by (seq, position): a position whose key a block holds already stays private
            own, pos, table, keys = entry[1], self._pos, seq.block_table, 0
            if len(own) < first:  # committed before a reset: those keys are gone
                own.extend(table[len(own) : first])
            if len(own) == first:  # the usual case: the positions are new, and so are their blocks' keys
                for i in range(first, done):  # (a block past the committed ones was allocated since: keyed by none)
                    block = table[i]
                    hash_of[block] = entry
                    pos[block] = i
                own.extend(table[first:done])
                entry[2] += done - first
                self._num_keys += done - first
                seq.num_committed_blocks = done
                return
            for i in range(first, done):
                block = table[i]
                if i < len(own):
                    held = own[i]
                    if hash_of[held] is entry and pos[held] == i:
                        continue  # its key is held (the hash found in the dict)
                    own[i] = block
                else:
                    own.append(block)
                if hash_of[block] is not None:
                    continue  # keyed already: stays private (its entry in `own` holds no key of `seq`)
                hash_of[block] = entry
                pos[block] = i
                keys += 1
            entry[2] += keys
            self._num_keys += keys
            seq.num_committed_blocks = done
            return
        for h, block in zip(self.hashes(seq, done)[first:done], seq.block_table[first:done], strict=True):
            if h not in cached and hash_of[block] is None:
                cached[h] = block
                hash_of[block] = h
        seq.num_committed_blocks = done

    def reset(self) -> None:
        """Forget every cached prefix (vLLM's reset_prefix_cache): unreferenced cached blocks become free;
        blocks in use keep their contents but will not be found again."""
        self._free.extend(reversed(self.evictable()))
        self._lru.clear()
        self._lru_entries = [0] * self.num_blocks
        self._segments.clear()
        self._num_evictable = 0
        self._cached.clear()
        self._hash_of = [None] * self.num_blocks
        self._by_first, self._num_keys = {} if self.keys_without_hashes else None, 0

    def _entry(self, seq: Sequence) -> list[Any] | None:
        """`seq`'s entry (itself, the blocks it committed by position, how many hold its keys) while no two
        sequences seen share a first token; None once two do (every key held hashed then, by `_hash_keys`)."""
        by_first = self._by_first
        if by_first is None or not seq.token_ids:
            return None
        entry = by_first.get(seq.token_ids[0])
        if entry is None:
            entry = by_first[seq.token_ids[0]] = [seq, [], 0, []]
        elif entry[0] is not seq:
            self._hash_keys()
            return None
        return entry

    def _drop(self, entry: list[Any]) -> None:
        """Forget a sequence none of whose blocks holds a key: found again, it starts a new entry."""
        by_first, first = self._by_first, entry[0].token_ids[0]
        if by_first is not None and by_first.get(first) is entry:
            del by_first[first]

    def _hash_keys(self) -> None:
        """From (sequence, position) keys to hashes: each held key's block put in the dict by its hash."""
        by_first, hash_of, pos, cached = self._by_first, self._hash_of, self._pos, self._cached
        lru = self._segments.blocks()  # the LRU a block an entry: every entry live (none is stale while keyed)
        self._lru = deque(lru)
        for block in lru:
            self._lru_entries[block] = 1
        self._segments.clear()
        self._by_first, self._num_keys = None, 0
        for entry in (by_first or {}).values():
            seq, own = entry[0], entry[1]
            hashes = self.hashes(seq, len(own))
            for i, block in enumerate(own):
                if hash_of[block] is entry and pos[block] == i:
                    cached[hashes[i]] = block
                    hash_of[block] = hashes[i]

    def refcounts(self) -> dict[int, int]:
        """block -> how many sequences reference it, for blocks in use."""
        return {block: count for block, count in enumerate(self._refs) if count}
