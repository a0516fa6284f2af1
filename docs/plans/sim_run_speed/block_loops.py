"""The per-block inner loops left in a chunk's block calls, unprofiled, in nanoseconds a block: the keyed
eviction's two stores (`_evict_keyed`), the keyed commit's two (`commit`'s usual case) and the free stack's
pops (`allocate`), each as the block manager writes it and in a bulk form (a C-level `map` of
`operator.setitem`, a slice of the stack). Lists of 20,000 like the run's pool, the lists local as in the
methods; 200 chunks of K scattered blocks, best of 7 repeats of 20.

    python docs/plans/sim_run_speed/block_loops.py [K ...]
"""

import random
import sys
import timeit
from collections import deque
from itertools import repeat
from operator import setitem

N = 20000


def measure(k: int) -> None:
    rng = random.Random(0)
    chunks = [rng.sample(range(N), k) for _ in range(200)]
    table = [b for c in chunks for b in c]
    spans = [(j * k, (j + 1) * k) for j in range(200)]
    entry: list[object] = [None, [], 0, []]
    lists = {"hash_of": [None] * N, "refs": [0] * N, "pos": [0] * N, "stack": list(range(N))}

    def evict_loop() -> None:
        hash_of, refs = lists["hash_of"], lists["refs"]  # locals, as in the methods
        for taken in chunks:
            for block in taken:
                hash_of[block] = None
                refs[block] = 1

    def evict_map() -> None:
        hash_of, refs = lists["hash_of"], lists["refs"]  # locals, as in the methods
        for taken in chunks:
            deque(map(setitem, repeat(hash_of), taken, repeat(None)), 0)
            deque(map(setitem, repeat(refs), taken, repeat(1)), 0)

    def commit_loop() -> None:
        hash_of, pos = lists["hash_of"], lists["pos"]  # locals, as in the methods
        for first, done in spans:
            for i in range(first, done):
                block = table[i]
                hash_of[block] = entry
                pos[block] = i

    def commit_slice() -> None:
        hash_of, pos = lists["hash_of"], lists["pos"]  # locals, as in the methods
        for first, done in spans:
            for i, block in enumerate(table[first:done], first):
                hash_of[block] = entry
                pos[block] = i

    def commit_map() -> None:
        hash_of, pos = lists["hash_of"], lists["pos"]  # locals, as in the methods
        for first, done in spans:
            new = table[first:done]
            deque(map(setitem, repeat(hash_of), new, repeat(entry)), 0)
            deque(map(setitem, repeat(pos), new, range(first, done)), 0)

    def stack_pops() -> None:
        stack, refs = lists["stack"], lists["refs"]  # locals, as in the methods
        for _ in spans:
            out = []
            for _ in range(k):
                block = stack.pop()
                refs[block] = 1
                out.append(block)
            stack.extend(out)

    def stack_slice() -> None:
        stack, refs = lists["stack"], lists["refs"]  # locals, as in the methods
        for _ in spans:
            out: list[int] = []
            taken = stack[-k:]
            del stack[-k:]
            taken.reverse()
            for block in taken:
                refs[block] = 1
            out.extend(taken)
            stack.extend(out)

    for f in (evict_loop, evict_map, commit_loop, commit_slice, commit_map, stack_pops, stack_slice):
        best = min(timeit.repeat(f, number=20, repeat=7)) / 20 / (200 * k)
        print(f"K={k} {f.__name__:12s} {best * 1e9:6.1f} ns a block", flush=True)


for k in map(int, sys.argv[1:] or ["31", "13", "2"]):
    measure(k)
