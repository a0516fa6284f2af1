"""Each real trial's speed against its profile's fit runs, kept beside the run (`speeds.json`) so that a trimmed
run, without its step traces, still has it. A trial's speed is its measured / priced busy time on the fit runs'
step shapes, relative to the fit runs (`harness.simulation.trial_speeds`; > 0: slower). speeds.json names the
engine, the profile file and the sha256 of the profile's bytes: speeds measured against other bytes are refused,
never used."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError

SPEEDS = "speeds.json"

Speeds = list[float | None]  # one a trial, in trial order; None: unknown (no step of a shape the fit runs had)


def real_engine(run: Path) -> dict[str, Any]:
    """The run's measured in-process engine (its description in the manifest)."""
    from harness.simulation import run_engines

    return next(e for e in run_engines(run) if e.get("kind") in ("static", "continuous"))


def profile_digest(profile: Path) -> str:
    """The sha256 of the profile's bytes (hex)."""
    return hashlib.sha256(profile.read_bytes()).hexdigest()


def traced_speeds(run: Path, engine: str, profile: Path) -> Speeds | None:
    """Each traced trial's speed (None for a trial whose trace has no step, or for every trial when the profile
    keeps no shape levels); None when the run keeps no step trace of `engine`."""
    from engines.sim.fitted import load_profile
    from harness.simulation import trial_speeds

    named = (p.stem.removeprefix(f"{engine}-t") for p in (run / "steps").glob(f"{engine}-t*.jsonl"))
    trials = sorted(int(t) for t in named if t.isdigit())
    if not trials:
        return None
    by_trial = {s["trial"]: s["speed"] for s in trial_speeds(run, engine, load_profile(profile)) or []}
    return [by_trial.get(t) for t in trials]


def write_speeds(run: Path, engine: str, profile: Path) -> bool:
    """`run`/speeds.json from its step traces; False (nothing written, a kept speeds.json left) without a trace."""
    speeds = traced_speeds(run, engine, profile)
    if speeds is None:
        return False
    record = {"engine": engine, "profile": profile.name, "profile_sha256": profile_digest(profile), "speeds": speeds}
    (run / SPEEDS).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return True


def read_speeds(run: Path, engine: str, profile: Path) -> Speeds | None:
    """`run`/speeds.json's speeds (None: no such file); one line, exit 2, when it is not the form written above
    or was measured for another engine or against other profile bytes."""
    path = run / SPEEDS
    if not path.is_file():
        return None
    try:
        record: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HarnessInputError(f"{path}: cannot read ({exc})") from None
    speeds = record.get("speeds") if isinstance(record, dict) else None
    if not isinstance(speeds, list) or not all(_speed(s) for s in speeds):
        raise HarnessInputError(f"{path}: field 'speeds': not a list of numbers or nulls")
    if record.get("engine") != engine:
        raise HarnessInputError(f"{path}: measured for engine {record.get('engine')!r}, not {engine!r}")
    if record.get("profile_sha256") != profile_digest(profile):
        raise HarnessInputError(
            f"{path}: stale: measured against other bytes of the profile than {profile} (its sha256 differs); "
            "write it again from the run's step traces (--measure)"
        )
    return [None if s is None else float(s) for s in speeds]


def _speed(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def run_speeds(run: Path, engine: str, profile: Path) -> Speeds | None:
    """A run's trial speeds: from its step traces when it keeps them, else from its speeds.json; None: neither."""
    traced = traced_speeds(run, engine, profile)
    return traced if traced is not None else read_speeds(run, engine, profile)
