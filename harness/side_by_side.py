"""Simulated engines of one trial side by side, a process each.

A simulated engine runs in virtual time: what else the machine does changes how long the simulation
takes, never what it measures. So the engines of an all-simulated comparison need not wait for each other
(the demo at scale: static and continuous batching over a simulated hour, each 20-25 s of one core; side by
side the whole run took 65 s against 78 s one after the other on this 2-core machine).
Each process writes its records to a part file beside records.jsonl and its step trace where it always
goes; the parent appends the parts in engine order once all are done, so records.jsonl reads as if the
engines had run in turn, and an interrupted run leaves part files that hold every record written. Each
process then summarises its own engine run from those two files, with the function the parent would have
used on the same rows, so the parent has only the paired comparison left to compute (a test checks that
metrics.json is the same either way).
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.compute_threads import usable_cores
from harness.jsonl import JsonlWriter
from harness.machine import measured, sample, trial_noise

if TYPE_CHECKING:
    from harness.engine_specs import EngineSpec
    from harness.loadgen import Scheduled
    from harness.run import RunSettings

# outcome, engine description, machine sample, summary (None: not summarised there)
Ran = tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any] | None]
# (spec, model, schedule, records, step trace, settings, trial) -> (outcome, engine description)
OneEngineRun = Callable[..., Coroutine[Any, Any, tuple[Any, dict[str, Any]]]]
# (records file, engine, trial, wall time, steps directory, settings) -> the engine run's summary
Summarise = Callable[[Path, str, int, float, Path, Any], dict[str, Any] | None]


MIN_REQUESTS = 5_000  # a process starts in 2-3 s (imports); a simulated request costs about 1 ms


def side_by_side(specs: list[EngineSpec], requests: int) -> bool:
    """Whether a trial's engines run side by side: two or more, all simulated, enough requests that starting
    a process costs less than it saves, and a core to spare. On a machine already busy (a CI runner's other
    test worker) a second process gains nothing and slows the neighbours, whose timings may matter."""
    if len(specs) < 2 or not all(spec.simulated for spec in specs) or requests < MIN_REQUESTS:
        return False
    return usable_cores() - others_load() >= 1.5  # room for a second process beside the first


def others_load(window_s: float = 0.25) -> float:
    """Cores that other processes (not this one or its children) kept busy over the next `window_s`; 0 where
    /proc is missing. Not the load average: that counts this process's own work of the last minutes (the
    demo's real runs, just before its simulations), which is over."""
    before = sample()
    time.sleep(window_s)
    noise = trial_noise(before, sample())
    return float(noise["others_share"]) * usable_cores() if noise["sampled"] else 0.0


def replay_side_by_side(
    run: OneEngineRun,
    specs: list[EngineSpec],
    schedules: list[list[Scheduled]],
    settings: RunSettings,
    trial: int,
    records: JsonlWriter,
    steps: list[Path | None],
    summarise: Summarise | None = None,
) -> list[Ran]:
    """Every engine of `specs` in its own process on its schedule, replayed by `run` (`harness.run`'s, passed
    in so that this module does not import the one that calls it); their records appended to `records`.
    `summarise`: each process then summarises its own engine run from its files, while the others still
    simulate, instead of the parent doing it for one after the other (a simulated hour: 4-5 s each)."""
    parts = [records.path.parent / f".{spec.label}-t{trial}.records.jsonl" for spec in specs]
    quiet = _without_progress(settings)  # one progress line per process would interleave
    processes = min(len(specs), usable_cores())
    print(f"  simulating {', '.join(s.label for s in specs)} side by side ({processes} processes)")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch or OpenMP state forked
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        futures = [
            pool.submit(_replay_one, run, spec, schedule, quiet, trial, part, path, summarise)
            for spec, schedule, part, path in zip(specs, schedules, parts, steps, strict=True)
        ]
        done = [future.result() for future in futures]
    for part in parts:
        records.append_file(part)
        part.unlink()
    return done


def _replay_one(
    run: OneEngineRun,
    spec: EngineSpec,
    schedule: list[Scheduled],
    settings: RunSettings,
    trial: int,
    part: Path,
    steps: Path | None,
    summarise: Summarise | None,
) -> Ran:
    with JsonlWriter(part) as records, measured() as noise:
        outcome, described = asyncio.run(run(spec, None, schedule, records, steps, settings, trial))
    summary = None
    if summarise is not None:
        try:
            summary = summarise(part, spec.label, trial, outcome.wall_time_s, settings.out_dir / "steps", settings)
        except Exception:  # a summary's failure must not lose the records: the parent appends them, then says why
            summary = None
    return outcome, described, noise, summary


def _without_progress(settings: RunSettings) -> RunSettings:
    return dataclasses.replace(settings, progress=None)
