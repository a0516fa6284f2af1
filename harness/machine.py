"""The machine's own noise during a trial, from /proc: load average, CPU steal and who used the CPU.

A shared CI runner is the normal case, not the exception, so every trial says what else ran beside it.
Two snapshots bracket the trial; between them:

- `load_avg_1m`: the kernel's 1-minute load average at the end (it counts this process's own runnable
  threads too, so it is context, not the verdict);
- `steal_share`: CPU time the hypervisor gave to other guests, over all CPU time (`steal` in /proc/stat);
- `process_cpu_cores`: this process's CPU time (all its threads, and its live descendants': the engine's
  own process, local load-generator workers) over wall time, in cores;
- `others_share`: CPU time spent by everything else on the machine, over all CPU time: busy time from
  /proc/stat minus this process tree's utime + stime (finished children included).

A trial is **busy** when other processes took more than `OTHERS_BUSY_SHARE` of the machine or the
hypervisor stole more than `STEAL_BUSY_SHARE`: its timings then measure the neighbours as well as the
engine. Without /proc (not Linux) nothing is sampled and the trial says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OTHERS_BUSY_SHARE = 0.25  # another process using a quarter of the machine moves latencies by more than the noise
STEAL_BUSY_SHARE = 0.05


@dataclass(frozen=True)
class ProcSample:
    """One reading of /proc: machine-wide CPU jiffies, this process's, and the load average."""

    t: float  # time.monotonic()
    total: int  # all CPU jiffies, every CPU
    busy: int  # total minus idle, iowait and steal
    steal: int
    process: int  # utime + stime + cutime + cstime of this process
    load_avg_1m: float


def _ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


def sample(root: Path = Path("/proc"), pid: str = "self") -> ProcSample | None:
    """Read the counters; None when /proc is missing or unreadable."""
    try:
        cpu = (root / "stat").read_text().splitlines()[0].split()
        stat = (root / pid / "stat").read_text()
        load = float((root / "loadavg").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    if cpu[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is already inside user)
    fields = [int(v) for v in cpu[1:9]] + [0] * max(0, 9 - len(cpu))
    total = sum(fields[:8])
    busy = total - fields[3] - fields[4] - fields[7]  # stolen time ran no process of this machine
    process = _cpu_jiffies(stat) + _descendants_jiffies(root, stat.split(None, 1)[0])
    return ProcSample(time.monotonic(), total, busy, fields[7], process, load)


def _cpu_jiffies(stat: str) -> int:
    """utime + stime + cutime + cstime (fields 14-17) of one /proc/PID/stat line."""
    # "pid (comm) state ppid ..."; comm may hold spaces, so count fields after the last ")"
    after = stat.rsplit(")", 1)[1].split()
    return sum(int(after[i]) for i in (11, 12, 13, 14))


def _descendants_jiffies(root: Path, pid: str) -> int:
    """CPU time of every live descendant of `pid` (a finished one is already in its parent's cutime)."""
    children: dict[str, list[tuple[str, str]]] = {}
    for entry in root.glob("[0-9]*/stat"):
        try:
            stat = entry.read_text()
        except OSError:  # exited while we looked
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        children.setdefault(ppid, []).append((stat.split(None, 1)[0], stat))
    total, todo = 0, [pid]
    while todo:
        for child, stat in children.get(todo.pop(), []):
            total += _cpu_jiffies(stat)
            todo.append(child)
    return total


def trial_noise(before: ProcSample | None, after: ProcSample | None, *, ticks: int | None = None) -> dict[str, Any]:
    """What the machine did between two samples, and whether the trial ran on a busy machine."""
    if before is None or after is None:
        return {
            "sampled": False,
            "busy": None,
            "reasons": [],
            "message": None,
            "note": "/proc is not available: machine load not measured",
        }
    ticks = ticks or _ticks()
    wall = max(after.t - before.t, 1e-9)
    total = max(after.total - before.total, 1)
    process = after.process - before.process
    others = max(after.busy - before.busy - process, 0) / total
    steal = (after.steal - before.steal) / total
    reasons = []
    if others > OTHERS_BUSY_SHARE:
        reasons.append(f"other processes used {others:.0%} of the machine's CPU")
    if steal > STEAL_BUSY_SHARE:
        reasons.append(f"the hypervisor stole {steal:.0%} of the CPU time")
    load = after.load_avg_1m
    message = f"ran on a busy machine: {'; '.join(reasons)} (1-min load average {load:.1f})" if reasons else None
    return {
        "sampled": True,
        "wall_s": wall,
        "load_avg_1m": after.load_avg_1m,
        "load_avg_1m_start": before.load_avg_1m,
        "steal_share": steal,
        "others_share": others,
        "process_cpu_cores": process / ticks / wall,
        "busy": bool(reasons),
        "reasons": reasons,
        "message": message,  # what readers (report, gate, console) print, so they need not import this module
    }


@contextmanager
def measured() -> Iterator[dict[str, Any]]:
    """`with measured() as noise: ...` fills `noise` with `trial_noise` of the block."""
    noise: dict[str, Any] = {}
    before = sample()
    try:
        yield noise
    finally:
        noise.update(trial_noise(before, sample()))
