"""Wall time per phase of one `batchmark run`, unprofiled: `harness.cli.main` with its phases timed.

    PYTHONPATH=TREE python docs/plans/sim_run_speed/phases.py run --workload azure-conv \
        --engine sim:model=llama-3.1-8b,hardware=h100 --no-progress --out DIR

Prints one line, `PHASES import-top S name S ...` (seconds; a phase inside another counts in both).
NOGC=name,name pauses the garbage collector inside those phases (the experiment of the second pass).
"""

import contextlib
import functools
import gc
import os
import sys
import time

t0 = time.perf_counter()
import harness.cli.run as cli_run  # noqa: E402
import harness.loadgen.virtual as virtual  # noqa: E402
import harness.metrics.frame as frame  # noqa: E402
import harness.metrics.summary as summary  # noqa: E402
import harness.run as run  # noqa: E402

seconds: dict[str, float] = {}
paused = set(filter(None, os.environ.get("NOGC", "").split(",")))


def timed(module, name: str, *also) -> None:
    """Replace `module.name` (and the same name in the modules `also` that imported it) by a timed wrapper."""
    inner = getattr(module, name)

    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        start, gc_off = time.perf_counter(), name in paused and gc.isenabled()
        if gc_off:
            gc.disable()
        try:
            return inner(*args, **kwargs)
        finally:
            if gc_off:
                gc.enable()
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start

    for target in (module, *also):
        setattr(target, name, wrapper)


timed(virtual, "run_virtual_open_loop")
timed(frame, "load_records", run)
timed(frame, "load_steps", run)
timed(summary, "summarize", run)
timed(run, "engine_run_summary")
timed(run, "compute_metrics")
timed(cli_run, "_write_report")
timed(cli_run, "execute")
imports = time.perf_counter() - t0

from harness.cli import main  # noqa: E402

sys.argv = ["batchmark", *sys.argv[1:]]
with contextlib.suppress(SystemExit):  # the CLI exits; the phases are printed all the same
    main()
phases = " ".join(f"{name} {s:.2f}" for name, s in seconds.items())
print(f"PHASES import-top {imports:.2f} {phases} total {time.perf_counter() - t0:.2f}", file=sys.stderr)
