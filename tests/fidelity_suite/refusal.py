"""A suite file refused before anything runs: one line on stderr naming the file, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main


def assert_refused(capsys: pytest.CaptureFixture[str], suite: Path, says: str, *options: str) -> None:
    """`sim fidelity --suite suite` (its runs/ absent: a suite that passed would stop there, never measure) exits 2
    with one line that names the file and says `says`."""
    assert main(["sim", "fidelity", "--suite", str(suite), "--runs", str(suite.parent / "runs"), *options]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and says in err and str(suite) in err, err
