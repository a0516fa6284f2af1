"""The block manager alone, base against new, interleaved: calls shaped like the azure-conv run's (prefill
chunks of 13 blocks, each committed; single-block decode growths, each committed; about 13 sequences live, the
oldest freed; a 20,000-block pool that is all cache after warm-up). Base is the frozen per-block manager
(tests/engines/block_manager_reference.py), or with BASE set that tree's engines/block_manager.py; new this tree's.
Unprofiled: cProfile charges every call, and the block manager is all calls.

    [BASE=/tmp/base-tree] PYTHONPATH=/work/wt/shim:$PWD BATCHMARK_TREE=$PWD \
        python docs/plans/sim_run_speed/block_bench.py [ROUNDS]
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


def run(module: ModuleType, sequences: int = 4000, block_size: int = 16) -> tuple[float, int]:
    """Seconds of one pass, and its evictions."""
    blocks = module.BlockManager(20000, block_size, prefix_caching=True)
    live: list[Sequence] = []
    start = time.perf_counter()
    for i in range(sequences):
        seq = Sequence.from_request(Request(f"r{i}", range(i << 40, (i << 40) + 200), 1000), i, 0.0)
        blocks.take_prefix(seq, blocks.match_prefix(seq))
        for _ in range(6):  # a chunked prefill: 6 chunks of 13 blocks, each committed
            blocks.allocate(seq, 13)
            seq.num_computed_tokens += 13 * block_size
            blocks.commit(seq)
        live.append(seq)
        for grown in live[::6]:  # decode growth: one block at a time, each committed
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
        seconds, evictions = run(module)
        print(f"round {r + 1} {name} {seconds:.3f} s, {evictions} evictions", flush=True)
