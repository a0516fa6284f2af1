"""The suite's real runs: the fit run (again after the pairs `[fit_run] after` names), every pair's trials, and
the profiles fitted on every fit run pooled, each `batchmark run` a process
of its own, holding the machine's timing lock (when given) for that run only, so that other measurements can
take turns between runs instead of waiting for the whole suite."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import HarnessInputError
from harness.fidelity_suite.spec import Pair, Profile, Suite

BATCHMARK = (sys.executable, "-m", "harness.cli")


def fit_command(suite: Suite, runs: Path, name: str | None = None) -> list[str]:
    """The fit run into `runs/NAME` (the first fit run's name unless another of `suite.fit_names` is given)."""
    return [*BATCHMARK, "run", *suite.run_args, *suite.fit_args, "--out", str(runs / (name or suite.fit_name))]


def pair_command(suite: Suite, pair: Pair, runs: Path) -> list[str]:
    return [
        *BATCHMARK,
        "run",
        *suite.run_args,
        *pair.args,
        "--engine",
        pair.engine,
        "--repeat",
        str(suite.trials),
        "--out",
        str(runs / pair.name),
    ]


@contextmanager
def _held(lock: Path | None) -> Iterator[None]:
    if lock is None:
        yield
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def _run(command: list[str], lock: Path | None, what: str) -> None:
    print(f"measuring {what}: {' '.join(command[3:])}", flush=True)
    with _held(lock):
        loadavg = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
        result = subprocess.run(command, check=False, stdout=subprocess.DEVNULL)
        after = Path("/proc/loadavg").read_text().split()[:3] if loadavg else []
    if loadavg:
        print(f"  load average at start {' '.join(loadavg)}, at end {' '.join(after)}", flush=True)
    if result.returncode != 0:
        raise HarnessInputError(f"{what}: `batchmark run` exited {result.returncode}; the suite stops there")


def measure(suite: Suite, runs: Path, lock: Path | None) -> None:
    """Every run the suite needs that `runs` does not hold yet (a run with its metrics.json is kept: a suite
    interrupted part-way resumes where it stopped), then the profiles fitted on every fit run pooled, as soon as
    the last fit run is recorded. The fit runs are only run while a profile is missing."""
    runs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in suite.profiles.values() if not (runs / p.file).is_file()]
    later = iter(suite.fit_names[1:])  # numbered in the order they run, after the pairs in the suite's order
    _fit(suite, runs, lock, suite.fit_name, missing)
    for pair in suite.pairs:
        if (runs / pair.name / "metrics.json").is_file():
            print(f"{pair.name}: already measured in {runs / pair.name}: kept")
        else:
            _run(pair_command(suite, pair, runs), lock, f"pair {pair.name}")
        if pair.name in suite.fit_after:
            _fit(suite, runs, lock, next(later), missing)


def _fit(suite: Suite, runs: Path, lock: Path | None, name: str, missing: list[Profile]) -> None:
    """The fit run `name` when a profile is missing and it is not recorded; after the last fit run, the profiles."""
    from harness.simulation import fit_run

    if missing and not (runs / name / "metrics.json").is_file():
        _run(fit_command(suite, runs, name), lock, f"fit run {name}")
    if name != suite.fit_names[-1]:
        return
    dirs = [runs / n for n in suite.fit_names]
    for profile in missing:
        fit_run(dirs, [profile.engine]).save(runs / profile.file)
        print(
            f"profile {profile.name}: fitted on {', '.join(suite.fit_names)}'s {profile.engine} steps: "
            f"{runs / profile.file}"
        )
