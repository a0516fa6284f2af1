"""The simulation alone of one `batchmark run`, profiled or counted (the tenth pass's map).

    PYTHONPATH=TREE python docs/plans/sim_run_speed/profile_sim.py MODE OUTPREFIX run --workload azure-conv \
        --engine sim:model=llama-3.1-8b,hardware=h100 --no-progress --out DIR

MODE wall: three unprofiled simulations on deep copies. MODE cprofile: one under cProfile, stats dumped to
OUTPREFIX.prof. MODE count: one run counting steps, decode runs and block calls. Step records are serialised
with orjson.dumps as the run's trace writer does; nothing is written to DIR.
"""

import copy
import cProfile
import os
import sys
import time

import orjson

import engines.sim.engine as sim_engine
import harness.loadgen.virtual as virtual

mode, prefix = sys.argv[1], sys.argv[2]
simulate = virtual.run_virtual_open_loop


def go(engine, schedule, *args, **kwargs):  # type: ignore[no-untyped-def]
    engine.step_sink = None
    template = copy.deepcopy((engine, schedule))
    if mode == "wall":
        for i in range(3):
            engine, schedule = copy.deepcopy(template)
            engine.set_step_sink(orjson.dumps)
            start = time.perf_counter()
            simulate(engine, schedule, lambda record: None, label="x")
            print(f"wall {i + 1} {time.perf_counter() - start:.3f} s load {os.getloadavg()[0]:.2f}", flush=True)
    elif mode == "cprofile":
        engine, schedule = copy.deepcopy(template)
        engine.set_step_sink(orjson.dumps)
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.enable()
        simulate(engine, schedule, lambda record: None, label="x")
        prof.disable()
        print(f"profiled {time.perf_counter() - start:.3f} s", flush=True)
        prof.dump_stats(prefix + ".prof")
    else:
        engine, schedule = copy.deepcopy(template)
        seen = {"records": 0, "decode_runs": 0, "bytes": 0}

        def sink(record):  # type: ignore[no-untyped-def]
            seen["records"] += 1
            b = orjson.dumps(record)
            seen["bytes"] += len(b)

        inner_run = sim_engine.run_decode

        def run_decode(eng, steps, until):  # type: ignore[no-untyped-def]
            ids, ends = inner_run(eng, steps, until)
            if ends:
                seen["decode_runs"] += 1
            return ids, ends

        sim_engine.run_decode = run_decode
        blocks = engine.blocks
        calls: dict[str, int] = {}
        for name in ("allocate", "_evict", "free", "commit", "take_prefix", "match_prefix", "can_allocate"):
            fn = getattr(blocks, name, None)
            if callable(fn):

                def wrap(*a, _fn=fn, _n=name, **k):  # type: ignore[no-untyped-def]
                    calls[_n] = calls.get(_n, 0) + 1
                    if _n in ("allocate", "_evict"):  # (seq, n) and (n, table): the blocks asked for
                        calls[_n + "_blocks"] = calls.get(_n + "_blocks", 0) + (a[1] if _n == "allocate" else a[0])
                    return _fn(*a, **k)

                setattr(blocks, name, wrap)
        engine.set_step_sink(sink)
        steps0 = engine._step
        simulate(engine, schedule, lambda record: None, label="x")
        print(f"count {seen} engine steps {engine._step - steps0} block calls {calls}")
        print(f"schedule {type(schedule).__name__} len {len(schedule) if hasattr(schedule, '__len__') else -1}")
    sys.stdout.flush()
    os._exit(0)


virtual.run_virtual_open_loop = go
from harness.cli import main  # noqa: E402

sys.argv = ["batchmark", *sys.argv[3:]]
main()
