"""Serving or running the embedded model never imports transformers (its import cost 8 s of CPU at start-up:
docs/measurements/2026-12-05-serve-start-plain-torch.md); a local checkpoint (`--model DIR`) still loads
through it. Each command runs in a fresh interpreter, which reports its own `sys.modules` at the end; every
process it starts (an engine worker, forked or spawned) reports its imports through PYTHONPROFILEIMPORTTIME."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# `serve` up to the point where it listens (the server itself is replaced: what is under test is everything
# it loads and builds first), or a whole `run`; then the transformers modules this process holds.
SCRIPT = """
import json, sys
import engines.serve.runner

async def listen_no_more(app, host, port, announce):
    return True

engines.serve.runner.serve = listen_no_more
from harness.cli import main

code = main(sys.argv[1:])
print("MODULES", json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] == "transformers")]))
"""
IMPORTED = re.compile(r"^import time:.*\|\s+transformers(\.|$)", re.MULTILINE)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", "0"],
        ["run", "--workload", "chat-small", "--requests", "2", "--engine", "continuous", "--no-progress"],
    ],
    ids=["serve", "run"],
)
def test_the_embedded_model_runs_without_transformers(argv: list[str], tmp_path: Path) -> None:
    if argv[0] == "run":
        argv = [*argv, "--no-report", "--out", str(tmp_path / "run")]
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, env=env, timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-2000:]
    code, modules = json.loads(line.removeprefix("MODULES "))
    assert code == 0, done.stdout[-2000:]
    assert modules == []
    assert "import time:" in done.stderr  # the import log is on: its silence about transformers means something
    assert not IMPORTED.search(done.stderr), IMPORTED.search(done.stderr)
