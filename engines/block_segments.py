"""The keyed block manager's LRU in segments: the cached blocks one `free` released, kept as one list.

While no two sequences share a first token (engines/block_manager.py's note), every cached block a sequence
releases is keyed to that sequence, and its blocks leave the LRU together: evicted from the oldest segment on, in
slices, or taken back by the sequence's own prefix hit. A segment per `free` replaces a deque entry per block (a
simulated hour frees, evicts and hands out 1.6 million blocks), and the order of the blocks is the per-block
LRU's: `free` appends its blocks least recent first, and eviction takes them from the front.
"""

from __future__ import annotations

from collections import deque
from typing import Any


class Segment:
    """The cached blocks one `free` put in the LRU, least recent first; `blocks[start:]` are still there."""

    __slots__ = ("blocks", "entry", "start")

    def __init__(self, entry: list[Any], blocks: list[int]) -> None:
        self.entry = entry  # the sequence's entry (the block manager's `_entry`): every block is keyed to it
        self.blocks = blocks
        self.start = 0


class SegmentLRU:
    """Segments in LRU order, oldest first; each entry lists its own segments (entry[3]) so that a prefix hit
    takes its blocks out at once instead of leaving stale entries to skip."""

    def __init__(self) -> None:
        self.segments: deque[Segment] = deque()

    def push(self, entry: list[Any], blocks: list[int]) -> None:
        segment = Segment(entry, blocks)
        self.segments.append(segment)
        entry[3].append(segment)

    def pop_front(self, num_blocks: int) -> tuple[list[Any], list[int]]:
        """Up to `num_blocks` of the oldest blocks (fewer when the oldest segment has fewer), with their entry."""
        while True:
            segment = self.segments[0]
            start, blocks = segment.start, segment.blocks
            end = start + num_blocks
            if end < len(blocks):  # the usual case: a slice of a segment (a sequence freed ~86 blocks)
                segment.start = end
                return segment.entry, blocks[start:end]
            self.segments.popleft()  # all of it taken: it leaves the LRU and its entry's list
            segment.entry[3].remove(segment)
            if start < len(blocks):  # (none left: emptied by prefix hits, so the next one's)
                return segment.entry, blocks[start:]

    def take_back(self, entry: list[Any], refs: list[int]) -> None:
        """Drop `entry`'s blocks that a prefix hit has just referenced (their `refs` no longer 0)."""
        for segment in entry[3]:
            segment.blocks = [block for block in segment.blocks[segment.start :] if not refs[block]]
            segment.start = 0

    def blocks(self) -> list[int]:
        """Every block in the LRU, least recently used first."""
        return [block for segment in self.segments for block in segment.blocks[segment.start :]]

    def clear(self) -> None:
        for segment in self.segments:  # each entry's list too: an entry and its segments would be a cycle,
            segment.entry[3].clear()  # and the entry holds its sequence's tokens (left for the collector)
        self.segments.clear()
