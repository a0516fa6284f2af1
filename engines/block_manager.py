"""KV-cache block manager: a fixed pool of fixed-size blocks, handed to sequences as they grow.

The pool's size comes from a memory budget, so admission is governed by real capacity: a sequence is
admitted only when blocks for its next chunk exist, and a running sequence that needs a block when
none is free forces a preemption.
"""

from __future__ import annotations

from collections import deque

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
        self._free: deque[int] = deque(range(num_blocks))
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
        total = self.blocks_for_tokens(seq.num_computed_tokens + num_new_tokens)
        return max(0, total - len(seq.block_table))

    def can_allocate(self, num_blocks: int) -> bool:
        """Whether `num_blocks` are free now."""
        return num_blocks <= len(self._free)

    def allocate(self, seq: Sequence, num_blocks: int) -> None:
        """Append `num_blocks` free blocks to `seq`'s block table."""
        if num_blocks > len(self._free):
            raise RuntimeError(f"{seq.request_id}: asked for {num_blocks} blocks, {len(self._free)} free")
        for _ in range(num_blocks):
            block = self._free.popleft()
            self._owner[block] = seq.request_id
            seq.block_table.append(block)

    def free(self, seq: Sequence) -> None:
        """Return every block `seq` holds to the pool."""
        for block in seq.block_table:
            if self._owner.pop(block, None) != seq.request_id:
                raise RuntimeError(f"{seq.request_id}: block {block} freed by a sequence that does not own it")
            self._free.append(block)
        seq.block_table.clear()

    def owners(self) -> dict[int, str]:
        return dict(self._owner)
