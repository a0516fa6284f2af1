"""Options each valid alone but senseless (issue #32): one line naming the option, exit 2, nothing run or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

STUDY_PLAN = Path(__file__).resolve().parents[1] / "study" / "overturned.toml"


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str], named: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("batchmark: error: ") and "Traceback" not in err, err
    assert named in err, err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "2"], "fallback_threshold"),
        (["--fallback", "cap", "--max-running", "8", "--fallback-max-running", "64"], "fallback_max_running"),
        (["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "nan"], "--fallback-threshold"),
        (["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "-0.5"], "--fallback-threshold"),
        (["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "inf"], "--fallback-threshold"),
        (["--fallback", "cap", "--fallback-max-running", "0"], "--fallback-max-running"),
    ],
)
def test_a_fallback_that_could_never_act_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    out = tmp_path / "run"
    argv = ["run", "--workload", "chat-small", "--requests", "4", "--engine", "sim", *flags, "--out", str(out)]
    one_line(capsys, [*argv, "--no-report", "--no-progress"], named)
    assert not out.exists()


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("")
    return path


@pytest.mark.parametrize("command", ["study", "sim fit"])
def test_an_out_path_that_cannot_be_written_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], a_file: Path, command: str
) -> None:
    out = a_file / "sub" / "out.json"  # under a file: no directory can be made there
    if command == "study":
        argv = ["study", str(STUDY_PLAN), "--sim", "--out", str(out)]
    else:
        argv = ["sim", "fit", str(tmp_path), "-o", str(out)]
    one_line(capsys, argv, "--out" if command == "study" else "-o")
    assert a_file.read_text() == ""


def test_study_trials_from_the_command_line_are_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    one_line(capsys, ["study", str(STUDY_PLAN), "--sim", "--trials", "1000000000", "--out", str(out)], "--trials")
    assert not out.exists()


def test_a_study_grid_above_the_bound_states_its_size_and_needs_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["study", str(STUDY_PLAN), "--sim", "--trials", "600", "--out", str(out)]
    one_line(capsys, argv, "units")
    assert not out.exists()
    assert main(["study", "--help"]) == 0 and "--yes" in capsys.readouterr().out
