"""The default thread count and OpenMP wait policy (docs/threads.md): every usable core, idle workers asleep.

The old default (all of os.cpu_count(), libgomp spinning idle workers) fell to a tenth of its speed while
another process held a core; these tests hold the choice that replaced it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from engines import compute_threads

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)


def test_the_default_count_is_the_cores_this_process_may_use(monkeypatch):
    # a CI runner's cpuset or `taskset` leaves fewer cores than the machine has
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert compute_threads.default_threads() == 3


def test_idle_workers_wait_passively_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    assert compute_threads.wait_passively() == "PASSIVE"
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert compute_threads.wait_passively() == "ACTIVE"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("GOMP_SPINCOUNT", "10000")
    assert compute_threads.wait_passively() is None and "OMP_WAIT_POLICY" not in os.environ


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}


def test_the_policy_reaches_libgomp_when_set_before_torch_loads():
    # OMP_DISPLAY_ENV makes libgomp print the settings it started with
    code = (
        "from engines import compute_threads; compute_threads.wait_passively(); import torch; "
        "torch.set_num_threads(2); (torch.ones(64, 64) @ torch.ones(64, 64)).sum()"
    )
    env = {**_clean_env(), "OMP_DISPLAY_ENV": "TRUE"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stderr.splitlines() if "OMP_WAIT_POLICY" in line]
    if not shown:
        pytest.skip("this torch build's OpenMP runtime does not display its settings")
    assert "PASSIVE" in shown[0]


def test_a_run_records_the_policy_in_its_manifest(tmp_path):
    code = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["run", "--workload", "chat-small", "--requests", "2", "--engine", "zero", "--no-report", "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv, "--out", str(tmp_path)],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["environment"]["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_pytest_plugin_sets_the_policy_before_any_conftest_loads(monkeypatch):
    """A test process that loaded torch before the policy was set kept spinning OpenMP workers (engine steps up
    to 20x slower under `pytest -n 2`): the plugin sets it in the hook pytest calls before the first conftest."""
    from harness import pytest_plugin

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    pytest_plugin.pytest_load_initial_conftests(None, None, [])  # type: ignore[arg-type]
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    pytest_plugin.pytest_load_initial_conftests(None, None, [])  # type: ignore[arg-type]
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"  # the user's choice is kept
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("GOMP_SPINCOUNT", "10000")
    pytest_plugin.pytest_load_initial_conftests(None, None, [])  # type: ignore[arg-type]
    assert "OMP_WAIT_POLICY" not in os.environ  # as compute_threads.wait_passively: a spin count is a choice
