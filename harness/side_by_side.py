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
import multiprocessing
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


MIN_REQUESTS = 5_000  # a process starts in 2-3 s (imports); a simulated request costs about 1 ms


def side_by_side(specs: list[EngineSpec], requests: int) -> bool:
    """Whether a trial's engines run side by side: two or more, all simulated, a core for each to use, and
    enough requests that starting a process costs less than it saves."""
    return (len(specs) > 1 and all(spec.simulated for spec in specs) and usable_cores() > 1
            and requests >= MIN_REQUESTS)  # fmt: skip


def replay_side_by_side(specs: list[EngineSpec], schedules: list[list[Scheduled]], settings: RunSettings,
                        trial: int, records: JsonlWriter, steps: list[Path | None]) -> list[Ran]:  # fmt: skip
    """Every engine of `specs` in its own process on its schedule; their records appended to `records`."""
    parts = [records.path.parent / f".{spec.label}-t{trial}.records.jsonl" for spec in specs]
    quiet = _without_progress(settings)  # one progress line per process would interleave
    processes = min(len(specs), usable_cores())
    print(f"  simulating {', '.join(s.label for s in specs)} side by side ({processes} processes)")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch or OpenMP state forked
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        futures = [pool.submit(_replay_one, spec, schedule, quiet, trial, part, path)
                   for spec, schedule, part, path in zip(specs, schedules, parts, steps, strict=True)]  # fmt: skip
        done = [future.result() for future in futures]
    for part in parts:
        records.append_file(part)
        part.unlink()
    return done


def _replay_one(spec: EngineSpec, schedule: list[Scheduled], settings: RunSettings, trial: int, part: Path,
                steps: Path | None) -> Ran:  # fmt: skip
    from harness.run import one_engine_run

    with JsonlWriter(part) as records, measured() as noise:
        outcome, described = asyncio.run(one_engine_run(spec, None, schedule, records, steps, settings, trial))
    return outcome, described, noise


def _without_progress(settings: RunSettings) -> RunSettings:
    import dataclasses

    return dataclasses.replace(settings, progress=None)
