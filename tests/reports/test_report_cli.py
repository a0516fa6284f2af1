"""`batchmark report`: default paths, --export, --markdown, --label, and input errors (exit code 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main


@pytest.fixture
def copy_run(run_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run_dir, tmp_path / "run"))


def test_report_is_written_into_the_run_directory(copy_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(copy_run)]) == 0
    out = capsys.readouterr().out
    assert (copy_run / "report.html").exists()
    assert "report.html" in out and "continuous wins" in out


def test_export_and_markdown(copy_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    code = main(
        ["report", str(copy_run), "-o", str(out), "--export", str(tmp_path / "exp"), "--markdown", str(summary)]
    )
    assert code == 0
    assert out.exists()
    for name in ("records.csv", "records.parquet", "report-metrics.json", "summary.md"):
        assert (tmp_path / "exp" / name).exists(), name
    text = summary.read_text()
    assert text.startswith("earlier step\n## ")  # appended, as CI step summaries collect several steps
    capsys.readouterr()
    assert main(["report", str(copy_run), "--no-html", "--markdown", "-"]) == 0
    assert capsys.readouterr().out.startswith("## synthetic-chat")


def test_several_runs_with_labels(
    copy_run: Path, after_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(copy_run), str(after_dir), "--label", "before", "--label", "after"]) == 0
    text = (tmp_path / "report.html").read_text()
    assert "after/continuous vs before/continuous" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "/nonexistent/run"], "not a run directory"),
        (["report", "{run}", "--label", "a", "--label", "b"], "--label values"),
        (["report", "{run}", "{run}", "--label", "x", "--label", "x"], "must differ"),
    ],
)
def test_bad_input_exits_2(copy_run: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([a.format(run=copy_run) for a in argv]) == 2
    assert message in capsys.readouterr().err
