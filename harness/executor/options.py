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
    if choice.workers > most:  # each is a process with its own interpreter: 1000 exhausted memory
        raise HarnessInputError(f"--workers {choice.workers}: at most {most} ({WORKERS_PER_CPU} per CPU here)")
    if choice.kind == "local":
        if choice.address is not None:
            raise HarnessInputError(f"--ray-address {choice.address}: needs --executor ray")
        return
    if importlib.util.find_spec("ray") is None:
        raise HarnessInputError("--executor ray: Ray is not installed in this environment (pip install ray==2.60.0)")
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
