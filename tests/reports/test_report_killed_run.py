"""The report of a run that was killed says how many scheduled requests were never sent."""

from __future__ import annotations

from harness.cli import main
from reports import analyse, write_report
from reports.load import load_run


def test_a_killed_run_reports_the_requests_never_sent(tmp_path, capsys):
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "30",
        "--time-scale",
        "50",
        "--engine",
        "zero",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    # what a SIGKILL after the tenth record leaves: no metrics.json, the records written so far
    records = tmp_path / "records.jsonl"
    records.write_text("".join(records.read_text().splitlines(keepends=True)[:10]))
    (tmp_path / "metrics.json").unlink()
    run = load_run(tmp_path)
    message = "zero trial 0: 20 of 30 scheduled requests were never sent (the run was killed or crashed first)"
    assert any(note.startswith(message) for note in run.notes), run.notes
    html = write_report(analyse([tmp_path]), tmp_path / "report.html").read_text()
    assert "20 of 30 scheduled requests were never sent" in html
