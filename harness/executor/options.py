"""The executor's option table: `--executor`, `--ray-address` and `--workers`, stated once.

The flags of every command that runs units (`run`, `sweep`, `calibrate`, `study`, the gate's replays) are
built from this table (`harness/cli/args.py`), and a choice is checked here before any work starts: a
missing Ray or an address where nothing listens is one error line, exit 2.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from dataclasses import dataclass

EXECUTOR_KINDS = ("local", "ray")
WORKERS_PER_CPU = 8  # load-generator processes mostly wait on sockets; more than this per core is a typo
# Resident memory of one local load-generator worker: a spawned interpreter with the harness, aiohttp and
# the engine clients imported measured 117 MiB (VmRSS, 2026-12-04); the rest is room for its connections.
WORKER_RSS_MB = 150.0
MEMORY_SHARE = 0.8  # workers may take at most this share of the memory available now without --force
CONNECT_TIMEOUT_S = 3.0  # a head node that does not answer a TCP connect in this long is taken as absent


@dataclass(frozen=True)
class ExecutorOption:
    """One executor flag: its name, type, default, help and choices."""

    name: str
    type: type
    default: object
    help: str
    choices: tuple[str, ...] = ()
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


EXECUTOR_OPTIONS = (
    ExecutorOption(
        "executor",
        str,
        "local",
        "where units (trials, sweep points, calibration pairs, study variants) run: local, in this process, "
        "or ray, spread over a Ray cluster (docs/cluster.md)",
        choices=EXECUTOR_KINDS,
    ),
    ExecutorOption(
        "ray_address",
        str,
        None,
        "the Ray cluster: HOST:PORT of a head started by `ray start --head`, ray://HOST:PORT (Ray Client), or "
        "auto; default: $RAY_ADDRESS, else a Ray instance started on this machine for the run",
        metavar="ADDR",
    ),
    ExecutorOption(
        "workers",
        int,
        1,
        "sharded load generation (http and zero engines): split each engine's schedule over N long-lived "
        "load-generator processes (local) or Ray actors (--executor ray), started together",
        metavar="N",
    ),
)


@dataclass(frozen=True)
class ExecutorChoice:
    """Which executor, where its cluster is, and how many load-generator workers drive an HTTP engine."""

    kind: str = "local"
    address: str | None = None
    workers: int = 1
    force: bool = False  # --force: past the bounds a slip usually crosses (workers per CPU, per request, memory)


def check_choice(choice: ExecutorChoice) -> None:
    """A valid choice, or `HarnessInputError` with one line: Ray missing, an unreachable address, a bad count."""
    # imported here: the pytest plugin reads this table at start-up, before any test module, and must not
    # load the `engines` package (a suite's own `tests/engines` package would then fail to import)
    from harness.errors import HarnessInputError

    if choice.kind not in EXECUTOR_KINDS:
        raise HarnessInputError(f"--executor {choice.kind}: expected one of {', '.join(EXECUTOR_KINDS)}")
    if choice.workers < 1:
        raise HarnessInputError(f"--workers {choice.workers}: must be >= 1")
    most = (os.cpu_count() or 1) * WORKERS_PER_CPU
    if choice.workers > most and not choice.force:  # each is a process with its own interpreter: 1000 exhausted memory
        raise HarnessInputError(
            f"--workers {choice.workers}: at most {most} ({WORKERS_PER_CPU} per CPU here); --force to start them"
        )
    if choice.kind == "local":
        if choice.address is not None:
            raise HarnessInputError(f"--ray-address {choice.address}: needs --executor ray")
        return
    if importlib.util.find_spec("ray") is None:
        raise HarnessInputError("--executor ray: Ray is not installed in this environment (pip install ray==2.60.0)")
    if choice.address is not None and not choice.address.strip():  # '' read as not given: a local Ray started
        raise HarnessInputError(f"--ray-address {choice.address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    address = choice.address or os.environ.get("RAY_ADDRESS")
    if address and address not in ("auto", "local"):
        host, port = _host_port(address)
        try:
            speaks = _speaks_grpc(host, port)
        except OSError as exc:
            raise HarnessInputError(
                f"--ray-address {address}: no Ray head answers at {host}:{port} ({exc.strerror or exc}); "
                "start one with `ray start --head` (docs/cluster.md)"
            ) from None
        if not speaks:  # ray.init would wait on it with no timeout
            raise HarnessInputError(
                f"--ray-address {address}: something other than a Ray head listens at {host}:{port} (no gRPC "
                f"answer in {CONNECT_TIMEOUT_S:g} s); give the head's GCS port (6379) or ray:// port (10001)"
            )


def check_workers(choice: ExecutorChoice, requests: int, meminfo: str = "/proc/meminfo") -> str | None:
    """Before any worker starts: more workers than requests is refused (one would have nothing to send), and
    so is a memory estimate above MEMORY_SHARE of what is available, unless forced. Returns the estimate line
    (None with one worker)."""
    from harness.errors import HarnessInputError

    if choice.workers <= 1:
        return None
    if choice.workers > requests and not choice.force:
        raise HarnessInputError(
            f"--workers {choice.workers}: more workers than the {requests} requests to send; --force to start them"
        )
    if choice.kind != "local":  # Ray actors live on the cluster's nodes: its scheduler places them
        return f"--workers {choice.workers}: Ray actors, placed by the cluster"
    need = choice.workers * WORKER_RSS_MB
    head = f"--workers {choice.workers}: about {need:,.0f} MiB ({WORKER_RSS_MB:g} MiB each"
    available = available_memory_mb(meminfo)
    if available is None:
        return f"{head}; available memory unknown)"
    line = f"{head}) of {available:,.0f} MiB available"
    if need > MEMORY_SHARE * available and not choice.force:
        raise HarnessInputError(f"{line}: more than {MEMORY_SHARE:.0%} of it; --force to start them")
    return line


def available_memory_mb(meminfo: str = "/proc/meminfo") -> float | None:
    """MemAvailable from /proc/meminfo in MiB; None where there is none (not Linux)."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for row in f:
                if row.startswith("MemAvailable:"):
                    return int(row.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS and client server) answers
# with a SETTINGS frame of its own; anything else (an HTTP/1 server, a database) does not
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4


def _speaks_grpc(host: str, port: int) -> bool:
    """Whether `host:port` answers HTTP/2, within CONNECT_TIMEOUT_S; OSError if nothing accepts a connection."""
    with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as conn:
        try:
            conn.sendall(_H2_PREFACE)
            head = b""
            while len(head) < 9:
                chunk = conn.recv(9 - len(head))
                if not chunk:
                    return False
                head += chunk
        except OSError:  # a timeout or a reset: not an HTTP/2 server
            return False
    return head[3] == _H2_SETTINGS


def _host_port(address: str) -> tuple[str, int]:
    from harness.errors import HarnessInputError

    bare = address.removeprefix("ray://")
    host, sep, port = bare.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise HarnessInputError(f"--ray-address {address}: expected HOST:PORT or ray://HOST:PORT")
    return host, int(port)
