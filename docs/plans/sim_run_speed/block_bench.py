"""The block manager alone, base against new, interleaved: calls shaped like the azure-conv run's (prefill
chunks of 13 blocks, each committed; single-block decode growths, each committed; about 13 sequences live, the
oldest freed; a 20,000-block pool that is all cache after warm-up). Base is the frozen per-block manager
(tests/engines/block_manager_reference.py), or with BASE set that tree's engines/block_manager.py; new this tree's.
Unprofiled: cProfile charges every call, and the block manager is all calls.

SHAPE `mix` is the run's mix of calls as counted in one azure-conv run (55,833 multi-block allocations, 25 blocks
each on average, against 254,841 single-block ones): per sequence 2 chunks of 25 blocks, each committed, then 9
single-block growths of its own, each committed; 12,000 sequences.

    [BASE=/tmp/base-tree] PYTHONPATH=/work/wt/shim:$PWD BATCHMARK_TREE=$PWD \
        python docs/plans/sim_run_speed/block_bench.py [ROUNDS] [SHAPE]
"""

import importlib.util
import os
import sys
import time
from types import ModuleType

from engines import block_manager as new
from engines.api import Request
from engines.sequence import Sequence
from tests.engines import block_manager_reference as base


def run(module: ModuleType, mix: bool, block_size: int = 16) -> tuple[float, int]:
    """Seconds of one pass, and its evictions."""
    blocks = module.BlockManager(20000, block_size, prefix_caching=True)
    live: list[Sequence] = []
    chunks, chunk, prompt = (2, 25, 800) if mix else (6, 13, 200)
    start = time.perf_counter()
    for i in range(12000 if mix else 4000):
        seq = Sequence.from_request(Request(f"r{i}", range(i << 40, (i << 40) + prompt), 1000), i, 0.0)
        blocks.take_prefix(seq, blocks.match_prefix(seq))
        for _ in range(chunks):  # a chunked prefill, each chunk committed
            blocks.allocate(seq, chunk)
            seq.num_computed_tokens += chunk * block_size
            blocks.commit(seq)
        live.append(seq)
        # decode growth, one block at a time, each committed: its own 9 (mix), or every sixth live sequence's
        for grown in [seq] * 9 if mix else live[::6]:
            blocks.allocate(grown, 1)
            grown.num_computed_tokens += block_size
            blocks.commit(grown)
        if len(live) > 13:
            blocks.free(live.pop(0))
    return time.perf_counter() - start, blocks.evictions


if tree := os.environ.get("BASE"):
    spec = importlib.util.spec_from_file_location("base_block_manager", f"{tree}/engines/block_manager.py")
    base = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(base)  # type: ignore[union-attr]

for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 6):
    for name, module in (("base", base), ("new", new)) if r % 2 == 0 else (("new", new), ("base", base)):
        seconds, evictions = run(module, sys.argv[2:3] == ["mix"])
        print(f"round {r + 1} {name} {seconds:.3f} s, {evictions} evictions", flush=True)
