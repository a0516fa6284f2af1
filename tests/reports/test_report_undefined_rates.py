"""A run whose steady window is degenerate shows its rates as n/a with the reason, in summary.md and the
HTML report, never as 0.0; and no interval reaches below zero."""

import json
from pathlib import Path

from reports import analyse, markdown_summary, write_report
from tests.fixtures.records import make_record


def _write_run(path: Path, records: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_near_burst_shows_na_and_why(tmp_path: Path) -> None:
    # 64 requests due within 63 ms, each taking over a second: nothing finishes in the steady window.
    recs = [
        make_record(f"r{i}", t_scheduled=i / 1000, ttft=1.0 + 0.01 * i, gaps=[0.1] * 4, engine=engine)
        for engine in ("a", "b")
        for i in range(64)
    ]
    analysis = analyse(_write_run(tmp_path / "run", recs))
    text = markdown_summary(analysis)
    throughput = next(line for line in text.splitlines() if line.startswith("| output throughput"))
    assert throughput.count("n/a") == 2 and "0.0" not in throughput
    assert "throughput and goodput are n/a: no token was produced inside the 0.057 s steady window" in text
    html = write_report(analysis, tmp_path / "report.html").read_text()
    assert 'title="no token was produced inside the 0.057 s steady window' in html


def test_rate_intervals_stop_at_zero(tmp_path: Path) -> None:
    # Every completion inside the steady window [2 s, 19.5 s] lands at t = 10 s, in one of its 20 sub-windows:
    # the batch-means interval (mean -/+ 2.09 sd / sqrt 20) would reach below zero.
    recs = [make_record(f"r{i}", t_scheduled=0.5 * i, ttft=(10.0 if i < 20 else 25.0) - 0.5 * i) for i in range(40)]
    analysis = analyse(_write_run(tmp_path / "run", recs))
    for headline in analysis.verdict.headlines:
        for estimate in headline.estimates.values():
            assert estimate.low is None or estimate.low >= 0, headline.name
