"""The suite's real runs: the fit run (again after the pairs `[fit_run] after` names), every pair's trials (or, in
an interleaved suite, rounds of a fit run and one trial of every pair), and the profiles fitted on every fit run
pooled, each `batchmark run` a process of its own, holding the machine's timing lock (when given) for that run
only, so that other measurements can take turns between runs instead of waiting for the whole suite."""

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


def pair_command(suite: Suite, pair: Pair, runs: Path, name: str | None = None) -> list[str]:
    """The pair's trials into `runs/NAME` (the pair's name unless another of `suite.pair_runs` is given: one
    trial of an interleaved suite's round)."""
    trials = 1 if suite.interleave else suite.trials
    return [
        *BATCHMARK,
        "run",
        *suite.run_args,
        *pair.args,
        "--engine",
        pair.engine,
        "--repeat",
        str(trials),
        "--out",
        str(runs / (name or pair.name)),
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
    the last fit run is recorded. The fit runs are only run while a profile is missing. Last, every traced pair
    run's trial speeds against its profile (speeds.json), so that they outlive its step traces."""
    runs.mkdir(parents=True, exist_ok=True)
    _measure_runs(suite, runs, lock)
    record_speeds(suite, runs)


def _measure_runs(suite: Suite, runs: Path, lock: Path | None) -> None:
    missing = [p for p in suite.profiles.values() if not (runs / p.file).is_file()]
    if suite.interleave:  # round r: the r-th fit run, then the r-th trial of every pair
        for r, fit_name in enumerate(suite.fit_names):
            _fit(suite, runs, lock, fit_name, missing)
            for pair in suite.pairs:
                _pair(suite, pair, runs, lock, suite.pair_runs(pair)[r])
        return
    later = iter(suite.fit_names[1:])  # numbered in the order they run, after the pairs in the suite's order
    _fit(suite, runs, lock, suite.fit_name, missing)
    for pair in suite.pairs:
        _pair(suite, pair, runs, lock, pair.name)
        if pair.name in suite.fit_after:
            _fit(suite, runs, lock, next(later), missing)


def _pair(suite: Suite, pair: Pair, runs: Path, lock: Path | None, name: str) -> None:
    if (runs / name / "metrics.json").is_file():
        print(f"{name}: already measured in {runs / name}: kept")
    else:
        _run(pair_command(suite, pair, runs, name), lock, f"pair {name}")


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


def record_speeds(suite: Suite, runs: Path) -> None:
    """speeds.json in every pair run that keeps its step traces, once its profile exists
    (`harness.fidelity_suite.speeds.write_speeds`); a run without traces keeps what it has."""
    from harness.fidelity_suite.speeds import real_engine, write_speeds

    for pair in suite.pairs:
        profile = runs / suite.profiles[pair.profile].file
        for run in (runs / name for name in suite.pair_runs(pair)):
            if not (run / "steps").is_dir() or not (run / "metrics.json").is_file() or not profile.is_file():
                continue
            if write_speeds(run, real_engine(run)["name"], profile):
                print(f"{run.name}: trial speeds against {profile.name}: {run / 'speeds.json'}")
