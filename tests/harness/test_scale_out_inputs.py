"""Scale-out flags that cannot work (issue #32): one line, exit 2, within a bounded time, no Ray started."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from harness.cli import main
from harness.errors import HarnessInputError
from harness.executor import options


def serve(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)

    def accept() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            answer(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def silent(conn: socket.socket) -> None:
    time.sleep(1.0)  # accepts, reads nothing, says nothing: ray.init waited on this forever


def http1(conn: socket.socket) -> None:
    conn.recv(100)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def http2(conn: socket.socket) -> None:
    conn.recv(100)
    conn.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))  # a SETTINGS frame, as a gRPC server's first word


@pytest.mark.parametrize("answer", [silent, http1])
def test_an_address_where_something_else_listens_is_one_line_in_bounded_time(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path, answer
) -> None:
    monkeypatch.setattr(options, "CONNECT_TIMEOUT_S", 0.3)
    for port in serve(answer):
        out = tmp_path / "run"
        argv = ["run", "--workload", "chat-small", "--engine", "zero", "--executor", "ray"]
        assert main([*argv, "--ray-address", f"127.0.0.1:{port}", "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and "--ray-address" in err, err
        assert "something other than a Ray head" in err, err
        assert not out.exists()


def test_a_silent_listener_is_given_up_on_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options, "CONNECT_TIMEOUT_S", 0.3)
    for port in serve(silent):
        started = time.monotonic()
        assert not options._speaks_grpc("127.0.0.1", port)
        assert time.monotonic() - started < 0.9  # the listener holds the connection 1 s: the probe did not wait


def test_a_grpc_listener_passes_the_probe() -> None:
    for port in serve(http2):
        assert options._speaks_grpc("127.0.0.1", port)


def test_an_unreachable_address_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    argv = ["run", "--workload", "chat-small", "--engine", "zero", "--executor", "ray", "--ray-address"]
    assert main([*argv, f"127.0.0.1:{port}", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Ray head answers" in err, err


def test_more_workers_than_the_machine_can_hold_are_refused(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    out = tmp_path / "run"
    workers = str((os.cpu_count() or 1) * options.WORKERS_PER_CPU + 1)
    assert main(["run", "--workload", "chat-small", "--engine", "zero", "--workers", workers, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--workers {workers}: at most" in err, err
    assert not out.exists()


def test_more_workers_than_requests_are_refused_unless_forced(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    out = tmp_path / "run"
    argv = ["run", "--workload", "chat-small", "--requests", "3", "--engine", "zero", "--workers", "4"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--workers 4: more workers than the 3 requests" in err, err
    assert "--force" in err and not out.exists()
    assert options.check_workers(options.ExecutorChoice(workers=4, force=True), 3) is not None  # forced: allowed


def test_the_workers_memory_is_estimated_and_bounded_before_they_start(tmp_path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 4000000 kB\nMemAvailable: {int(options.WORKER_RSS_MB * 10 * 1024)} kB\n")
    line = options.check_workers(options.ExecutorChoice(workers=4), 100, str(meminfo))
    assert (
        line == f"--workers 4: about {4 * options.WORKER_RSS_MB:,.0f} MiB ({options.WORKER_RSS_MB:g} MiB each) "
        f"of {options.WORKER_RSS_MB * 10:,.0f} MiB available"
    )
    with pytest.raises(HarnessInputError) as info:
        options.check_workers(options.ExecutorChoice(workers=9), 100, str(meminfo))
    assert "more than 80% of it; --force" in str(info.value)
    assert options.check_workers(options.ExecutorChoice(workers=9, force=True), 100, str(meminfo)) is not None
    assert "unknown" in options.check_workers(options.ExecutorChoice(workers=2), 100, str(tmp_path / "none"))
    assert options.check_workers(options.ExecutorChoice(workers=1), 1) is None


@pytest.mark.parametrize("address", ["", "  "])
def test_an_empty_ray_address_is_refused_not_read_as_none(
    capsys: pytest.CaptureFixture[str], tmp_path, address
) -> None:
    out = tmp_path / "run"  # '' was read as not given: a local Ray instance started and the run went on
    argv = ["run", "--workload", "chat-small", "--engine", "zero", "--executor", "ray", "--ray-address", address]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--ray-address {address!r}: expected HOST:PORT" in err, err
    assert not out.exists()
