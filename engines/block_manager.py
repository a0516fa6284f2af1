"""KV-cache block manager: a fixed pool of fixed-size blocks, handed to sequences as they grow.

The pool's size comes from a memory budget, so admission is governed by real capacity: a sequence is
admitted only when blocks for its next chunk exist, and a running sequence that needs a block when
none is free forces a preemption. Free blocks are a stack: the block freed last is handed out first,
so the blocks in use stay few and close together (still in cache, on pages the TLB knows) instead of
cycling through the whole pool as a FIFO would.
"""

from __future__ import annotations

from engines.sequence import Sequence


def blocks_for_budget(budget_bytes: int, bytes_per_token: int, block_size: int) -> int:
    return max(0, budget_bytes // (bytes_per_token * block_size))


class BlockManager:
    """A fixed pool of `num_blocks` KV blocks of `block_size` tokens; each block has one owning sequence."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks <= 0 or block_size <= 0:
            raise ValueError(f"need positive num_blocks and block_size, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free: list[int] = list(range(num_blocks - 1, -1, -1))  # pop() gives block 0 first
        self._owner: dict[int, str] = {}

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def num_used(self) -> int:
        return self.num_blocks - len(self._free)

    def blocks_for_tokens(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def blocks_needed(self, seq: Sequence, num_new_tokens: int) -> int:
        """Extra blocks `seq` needs to hold `num_new_tokens` more computed tokens."""
        extra = -(-(seq.num_computed_tokens + num_new_tokens) // self.block_size) - len(seq.block_table)
        return extra if extra > 0 else 0

    def can_allocate(self, num_blocks: int) -> bool:
        """Whether `num_blocks` are free now."""
        return num_blocks <= len(self._free)

    def allocate(self, seq: Sequence, num_blocks: int) -> None:
        """Append `num_blocks` free blocks to `seq`'s block table."""
        if not num_blocks:  # most calls: a decode step that stays inside its last block
            return
        free = self._free
        if num_blocks > len(free):
            raise RuntimeError(f"{seq.request_id}: asked for {num_blocks} blocks, {len(free)} free")
        blocks = [free.pop() for _ in range(num_blocks)]  # a stack: the blocks in use stay few and cache-warm
        self._owner.update(dict.fromkeys(blocks, seq.request_id))
        seq.block_table.extend(blocks)

    def free(self, seq: Sequence) -> None:
        """Return every block `seq` holds to the pool."""
        owner, rid = self._owner, seq.request_id
        for block in seq.block_table:
            if owner.pop(block, None) != rid:
                raise RuntimeError(f"{rid}: block {block} freed by a sequence that does not own it")
        self._free.extend(reversed(seq.block_table))  # the next allocation gets them back in table order
        seq.block_table.clear()

    def owners(self) -> dict[int, str]:
        return dict(self._owner)
