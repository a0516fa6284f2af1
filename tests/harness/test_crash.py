"""SIGKILL mid-run: every request that finished before the kill has a readable record on disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.metrics import load_records


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
def test_sigkill_keeps_finished_records(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "--workload",
            "chat-small",
            "--requests",
            "400",
            "--engine",
            "continuous",
            "--out",
            str(out),
            "--no-report",
            "--no-progress",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    records = out / "records.jsonl"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            if records.exists() and records.read_text().count("\n") >= 8:
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "exited early"
            time.sleep(0.2)
        else:
            pytest.fail("no records appeared within 240 s")
        engine_children = children_of(proc.pid)
        assert engine_children, "the engine loop runs in its own process by default"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30  # its pipe closes with the parent: the engine process exits, no orphan
        while any(Path(f"/proc/{pid}").exists() for pid in engine_children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(Path(f"/proc/{pid}").exists() for pid in engine_children)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    lines = records.read_text().splitlines()
    complete = [json.loads(line) for line in lines if line.endswith("}")]
    assert len(complete) >= 8
    assert all(r["finish_reason"] == "length" and r["output_tokens"] == r["max_tokens"] for r in complete)
    frame = load_records(records)  # the reader tolerates a torn last line
    assert len(frame) >= len(complete) - 1
    steps = (out / "steps" / "continuous-t0.jsonl").read_text().splitlines()
    assert len(steps) > 8
    assert (out / "manifest.json").is_file()
