"""The simulation alone, base against new in one process: the schedule and engine `batchmark run` builds,
simulated again and again on deep copies, alternating the base tree's `decode_run_steps` with this tree's (the
one function through which a decode-path change is reached) and the base tree's `BlockManager` class with this
tree's (the engine's block manager switched to it: both keep the same attributes), and the base tree's
`Sequence.from_request` with this tree's (the prompt kept as a list or as this tree's `Tokens`). A whole run's wall time
(pairs.sh) moves by a second or more with the machine's load; this leaves out imports, metrics and report, and
the process start.

    BASE=/tmp/base-tree PYTHONPATH=/work/wt/shim:$PWD BATCHMARK_TREE=$PWD python docs/plans/sim_run_speed/sim_ab.py \
        ROUNDS run --workload azure-conv --engine sim:model=llama-3.1-8b,hardware=h100 --no-progress --out DIR

ROUNDS 0: one run of this tree's code instead, counting the continuous finishing steps run without a plan and the
time spent in them. Prints one line a simulation, then exits (nothing is written to DIR).
"""

import copy
import importlib.util
import os
import sys
import time

import orjson

import engines.block_manager as block_manager
import engines.sequence as sequence_mod
import engines.sim.decode_run as decode_run
import engines.sim.engine as sim_engine
import harness.loadgen.virtual as virtual

rounds = int(sys.argv[1])
spec = importlib.util.spec_from_file_location("base_decode_run", f"{os.environ['BASE']}/engines/sim/decode_run.py")
base = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(base)  # type: ignore[union-attr]
modes = {"base": base.decode_run_steps, "new": decode_run.decode_run_steps}
# and the block manager's class (the engine's instance is switched to the base tree's or this tree's each run)
spec = importlib.util.spec_from_file_location("base_block_manager", f"{os.environ['BASE']}/engines/block_manager.py")
base_blocks = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(base_blocks)  # type: ignore[union-attr]
managers = {"base": base_blocks.BlockManager, "new": block_manager.BlockManager}
simulate = virtual.run_virtual_open_loop
# and how a sequence is built from its request (the base tree's function on this tree's class)
spec = importlib.util.spec_from_file_location("base_sequence", f"{os.environ['BASE']}/engines/sequence.py")
base_seq = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
sys.modules["base_sequence"] = base_seq  # its dataclass looks its module up
spec.loader.exec_module(base_seq)  # type: ignore[union-attr]
froms = {
    "base": classmethod(base_seq.Sequence.from_request.__func__),
    "new": sequence_mod.Sequence.__dict__["from_request"],
}


def count(engine, schedule) -> None:  # type: ignore[no-untyped-def]
    seen = {"calls": 0, "rows": 0, "s": 0.0, "steps": 0}
    inner = sim_engine.finishing_decode_step

    def timed(engine, *rest):  # type: ignore[no-untyped-def]
        seen["calls"] += 1
        seen["rows"] += len(engine.scheduler.running)
        start = time.perf_counter()
        paused = inner(engine, *rest)
        seen["s"] += time.perf_counter() - start
        return paused

    sim_engine.finishing_decode_step = timed
    engine.set_step_sink(lambda record: seen.__setitem__("steps", seen["steps"] + 1))
    simulate(engine, schedule, lambda record: None, label="x")
    calls = seen["calls"]
    print(
        f"{calls} continuous finishing steps without a plan of {seen['steps']} steps, {seen['s']:.3f} s in them, "
        f"mean batch {seen['rows'] / max(calls, 1):.1f}"
    )


def rounds_of(engine, schedule, *args, **kwargs):  # type: ignore[no-untyped-def]
    engine.step_sink = None  # the run directory's open trace: neither copied nor written
    template = copy.deepcopy((engine, schedule))
    if not rounds:
        count(*template)
    for i in range(rounds):
        for mode in ("base", "new") if i % 2 == 0 else ("new", "base"):
            engine, schedule = copy.deepcopy(template)
            sim_engine.decode_run_steps = modes[mode]
            sequence_mod.Sequence.from_request = froms[mode]  # type: ignore[method-assign]
            engine.blocks.__class__ = managers[mode]  # the scheduler holds the same object
            engine.set_step_sink(orjson.dumps)  # each record serialised, as the run's trace writer does
            start = time.perf_counter()
            simulate(engine, schedule, lambda record: None, label="x")
            print(f"round {i + 1} {mode} {time.perf_counter() - start:.3f} s load {os.getloadavg()[0]:.2f}", flush=True)
    sys.stdout.flush()
    os._exit(0)  # the measurement is all: no metrics, no report


virtual.run_virtual_open_loop = rounds_of
from harness.cli import main  # noqa: E402

sys.argv = ["batchmark", *sys.argv[2:]]
main()
