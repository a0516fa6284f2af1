"""What the gate compares: one engine's records from a run directory (or a records.jsonl file).

All trials of the chosen engine are kept (column `trial`); a paired comparison matches requests on
(trial, request_id), so repeated trials pool into one larger paired sample (harness.judge.pairing decides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from engines.sim.files import read_json_object
from harness.errors import HarnessInputError
from harness.judge.pairing import follows_engine
from harness.metrics import SLO, load_records, records_frame


@dataclass
class RunSample:
    """One side of a gate comparison: an engine's records from one or more runs, with their SLO and fingerprint."""

    source: str
    engine: str
    records: pd.DataFrame
    slo: SLO | None = None  # the SLO the run was made with, from its manifest
    fingerprint: str | None = None  # the workload's, from the manifest
    closed_loop: bool = False  # send times followed the engine's pace (harness.judge.pairing.follows_engine)
    machine: dict[int, dict[str, Any]] = field(default_factory=dict)  # trial -> harness.machine noise

    @property
    def busy_trials(self) -> dict[int, str]:
        """Trials that ran on a busy machine, with what made it busy."""
        return {t: "; ".join(n.get("reasons") or []) for t, n in sorted(self.machine.items()) if n.get("busy")}

    @property
    def trials(self) -> list[int]:
        return sorted(int(t) for t in self.records["trial"].unique())


def sample_from_records(
    records: pd.DataFrame | list[dict[str, Any]],
    *,
    engine: str | None = None,
    trial: int | None = None,
    source: str = "records",
    slo: SLO | None = None,
    closed_loop: bool | None = None,
) -> RunSample:
    """Pick one engine (and optionally one trial) from a records table or a list of record dicts;
    `closed_loop` None: read off the records (every one has a user)."""
    frame = records if isinstance(records, pd.DataFrame) else records_frame(records)
    engines = sorted(str(e) for e in frame["engine"].dropna().unique())
    if engine is None:
        if len(engines) != 1:
            raise HarnessInputError(
                f"{source}: holds engines {', '.join(engines) or 'none'}; name one "
                "(--baseline-engine / --candidate-engine, or engine = ... in the rules file)"
            )
        engine = engines[0]
    elif engine not in engines:
        raise HarnessInputError(f"{source}: no engine {engine!r} (it holds {', '.join(engines) or 'none'})")
    chosen = frame[frame["engine"] == engine]
    if trial is not None:
        if trial not in set(chosen["trial"]):
            raise HarnessInputError(f"{source}: engine {engine!r} has no trial {trial}")
        chosen = chosen[chosen["trial"] == trial]
    chosen = chosen.reset_index(drop=True)
    closed = follows_engine(chosen) if closed_loop is None else closed_loop
    return RunSample(source, engine, chosen, slo=slo, closed_loop=closed)


def load_run(path: Path, *, engine: str | None = None, trial: int | None = None) -> RunSample:
    """A run directory (records.jsonl plus manifest.json) or a bare records.jsonl file."""
    records_path = path / "records.jsonl" if path.is_dir() else path
    if not records_path.is_file():
        raise HarnessInputError(f"{path}: not a run directory or records file (no records.jsonl)")
    frame = load_records(records_path)
    if frame.empty:
        raise HarnessInputError(f"{records_path}: holds no records")
    manifest = _manifest(records_path.parent / "manifest.json")
    settings = manifest.get("settings") or {}
    slo = SLO(**settings["slo"]) if isinstance(settings.get("slo"), dict) else None
    closed = follows_engine(frame, manifest)
    sample = sample_from_records(frame, engine=engine, trial=trial, source=str(path), slo=slo, closed_loop=closed)
    sample.fingerprint = (manifest.get("workload") or {}).get("fingerprint")
    sample.machine = {
        int(o.get("trial") or 0): o["machine"]
        for o in manifest.get("outcomes") or []
        if isinstance(o, dict)
        and o.get("engine") == sample.engine
        and isinstance(o.get("machine"), dict)
        and int(o.get("trial") or 0) in sample.trials
    }
    return sample


def load_runs(paths: list[Path], *, engine: str | None = None, trial: int | None = None) -> RunSample:
    """Several runs of one side as one sample, their trials numbered in the order given: runs made one
    trial at a time, interleaved with the other side's (ABAB...), keep machine drift off one side."""
    samples = [load_run(path, engine=engine, trial=trial) for path in paths]
    if len(samples) == 1:
        return samples[0]
    frames, offset, machine = [], 0, {}
    for sample in samples:
        numbers = {t: offset + i for i, t in enumerate(sample.trials)}
        frames.append(sample.records.assign(trial=sample.records["trial"].map(numbers)))
        machine.update({numbers[t]: noise for t, noise in sample.machine.items() if t in numbers})
        offset += len(numbers)
    first = samples[0]
    fingerprints = {s.fingerprint for s in samples}
    return RunSample(
        " + ".join(s.source for s in samples),
        first.engine,
        pd.concat(frames, ignore_index=True),
        slo=first.slo,
        fingerprint=first.fingerprint if len(fingerprints) == 1 else None,
        closed_loop=any(s.closed_loop for s in samples),
        machine=machine,
    )


def _manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    return read_json_object(path, "run's manifest")
