"""A trial that ran while the machine was busy is flagged in the report and summary.md."""

import json
from pathlib import Path

from harness.metrics import records_frame, summarize
from reports import analyse, markdown_summary
from tests.fixtures.records import make_record


def test_a_busy_trial_is_a_validity_flag(tmp_path: Path) -> None:
    recs = [make_record(f"r{i}", t_scheduled=0.5 * i, gaps=[0.05] * 3) for i in range(30)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    message = "ran on a busy machine: other processes used 71% of the machine's CPU (1-min load average 3.2)"
    noise = {
        "sampled": True,
        "busy": True,
        "reasons": ["other processes used 71% of the machine's CPU"],
        "message": message,
    }
    entry = {"engine": "e", "trial": 0, "summary": summarize(records_frame(recs), n_boot=20), "machine": noise}
    (run / "metrics.json").write_text(json.dumps({"schema_version": 1, "runs": [entry]}))
    analysis = analyse(run)
    flags = [f for f in analysis.verdict.flags if f["name"] == "busy_machine"]
    assert len(flags) == 1 and flags[0]["series"] == "e"
    assert flags[0]["message"].startswith("trial 0 ran on a busy machine: other processes used 71%")
    assert "**busy_machine**" in markdown_summary(analysis)
