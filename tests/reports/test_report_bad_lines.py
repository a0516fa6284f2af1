"""A line of a run directory's JSON-lines files that is not JSON is one error line naming the file and the
line, exit 2, for every command that reads the file: no warning before it, no traceback. Only a bad last
line after whole ones is taken as a crash mid-write (skipped with a warning); a file whose only line is
bad holds nothing to read. The run directory is a fixture run's copy, broken one line at a time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main

READERS = {  # which commands read which file of a run directory
    "records.jsonl": ("report", "compare", "gate", "export"),
    "requests.jsonl": ("report", "compare"),
    "steps": ("report", "compare"),
}
CASES = [(name, command, where) for name, commands in READERS.items() for command in commands for where in ("only", 3)]


def _argv(command: str, run: Path, base: Path, tmp_path: Path) -> list[str]:
    return {
        "report": ["report", str(run), "--no-html", "--markdown", str(tmp_path / "s.md")],
        "compare": ["compare", str(base), str(run)],
        "gate": [
            "gate",
            "--baseline",
            str(base),
            "--candidate",
            str(run),
            "--engine",
            "continuous",
            "--rule",
            "tpot.p50 <= +5%",
        ],
        "export": ["export", str(run), "--out", str(tmp_path / "export")],
    }[command]


@pytest.mark.parametrize(("name", "command", "where"), CASES)
def test_a_line_that_is_not_json_is_one_line_and_exit_2(run_dir, tmp_path, capsys, name, command, where):
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    path = run / name if name != "steps" else sorted((run / "steps").iterdir())[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    if where == "only":
        lines = ["not json"]
    else:
        lines[where - 1] = '{"request_id": "r0", oops'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(_argv(command, run, run_dir, tmp_path)) == 2
    err = capsys.readouterr().err
    line = 1 if where == "only" else where
    assert err.count("\n") == 1 and err.startswith(f"batchmark: error: {path}:{line}: not a JSON object: "), err
