"""Simulated engines of one trial side by side, a process each.

A simulated engine runs in virtual time: what else the machine does changes how long the simulation
takes, never what it measures. So the engines of an all-simulated comparison need not wait for each other
(the demo at scale: static and continuous batching over a simulated hour, each 20-25 s of one core; side by
side the whole run took 65 s against 78 s one after the other on this 2-core machine).
Each process writes its records to a part file beside records.jsonl and its step trace where it always
goes; the parent appends the parts in engine order once all are done, so records.jsonl reads as if the
engines had run in turn, and an interrupted run leaves part files that hold every record written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import os
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.compute_threads import usable_cores
from harness.jsonl import JsonlWriter
from harness.machine import measured

if TYPE_CHECKING:
    from harness.engine_specs import EngineSpec
    from harness.loadgen import Scheduled
    from harness.run import RunSettings

Ran = tuple[Any, dict[str, Any], dict[str, Any]]  # outcome, engine description, machine sample
# (spec, model, schedule, records, step trace, settings, trial) -> (outcome, engine description)
OneEngineRun = Callable[..., Coroutine[Any, Any, tuple[Any, dict[str, Any]]]]


MIN_REQUESTS = 5_000  # a process starts in 2-3 s (imports); a simulated request costs about 1 ms


def side_by_side(specs: list[EngineSpec], requests: int) -> bool:
    """Whether a trial's engines run side by side: two or more, all simulated, enough requests that starting
    a process costs less than it saves, and a core to spare. On a machine already busy (a CI runner's other
    test worker) a second process gains nothing and slows the neighbours, whose timings may matter."""
    if len(specs) < 2 or not all(spec.simulated for spec in specs) or requests < MIN_REQUESTS:
        return False
    return usable_cores() - spare_load() >= 0.5


def spare_load() -> float:
    """The 1-minute load average (this process's own running thread included), 0 where there is none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def replay_side_by_side(run: OneEngineRun, specs: list[EngineSpec], schedules: list[list[Scheduled]],
                        settings: RunSettings, trial: int, records: JsonlWriter,
                        steps: list[Path | None]) -> list[Ran]:  # fmt: skip
    """Every engine of `specs` in its own process on its schedule, replayed by `run` (`harness.run`'s, passed
    in so that this module does not import the one that calls it); their records appended to `records`."""
    parts = [records.path.parent / f".{spec.label}-t{trial}.records.jsonl" for spec in specs]
    quiet = _without_progress(settings)  # one progress line per process would interleave
    processes = min(len(specs), usable_cores())
    print(f"  simulating {', '.join(s.label for s in specs)} side by side ({processes} processes)")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch or OpenMP state forked
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        futures = [pool.submit(_replay_one, run, spec, schedule, quiet, trial, part, path)
                   for spec, schedule, part, path in zip(specs, schedules, parts, steps, strict=True)]  # fmt: skip
        done = [future.result() for future in futures]
    for part in parts:
        records.append_file(part)
        part.unlink()
    return done


def _replay_one(run: OneEngineRun, spec: EngineSpec, schedule: list[Scheduled], settings: RunSettings, trial: int,
                part: Path, steps: Path | None) -> Ran:  # fmt: skip
    with JsonlWriter(part) as records, measured() as noise:
        outcome, described = asyncio.run(run(spec, None, schedule, records, steps, settings, trial))
    return outcome, described, noise


def _without_progress(settings: RunSettings) -> RunSettings:
    return dataclasses.replace(settings, progress=None)
