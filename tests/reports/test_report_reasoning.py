"""summary.md shows TTFO and the requests that spent max_tokens reasoning, only for a run that had reasoning."""

import json
from pathlib import Path

from harness.metrics import records_frame, summarize
from reports import analyse, markdown_summary
from tests.fixtures.records import make_record


def _summary_md(tmp_path: Path, channels: str) -> str:
    recs = [make_record(f"r{i}", t_scheduled=0.5 * i, gaps=[0.05] * 3, token_channels=channels) for i in range(6)]
    run = tmp_path / (channels or "plain")
    run.mkdir()
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    entry = {"engine": "e", "trial": 0, "summary": summarize(records_frame(recs), n_boot=20)}
    (run / "metrics.json").write_text(json.dumps({"schema_version": 1, "runs": [entry]}))
    return markdown_summary(analyse(run))


def test_ttfo_rows_appear_with_reasoning_only(tmp_path: Path) -> None:
    text = _summary_md(tmp_path, "rrcc")
    assert "| TTFO p50 | 200 ms |" in text  # first token 100 ms after arrival, then two 50 ms reasoning steps
    assert "| spent max_tokens reasoning | 0 |" in text
    assert "TTFO" not in _summary_md(tmp_path, "")
