"""Guards that name what is missing: runs of different workloads compared only under a banner (compare's
console output, the Markdown summary, the HTML report), and a percentile the sample cannot resolve shown
as such rather than with a tight interval."""

from __future__ import annotations

from dataclasses import replace

from reports import fmt, tables
from reports.analysis import analyse
from reports.markdown import markdown_summary
from reports.report import build_report


def test_runs_of_different_workloads_are_compared_under_a_banner(run_dir, other_schedule_dir):
    a = analyse([run_dir, other_schedule_dir])
    assert a.banner is not None and "replayed different workloads" in a.banner
    assert f"> ⚠️ **{a.banner}**" in markdown_summary(a)  # what `batchmark compare` prints, and summary.md
    html = build_report(a)
    assert 'class="banner"' in html and "replayed different workloads" in html
    assert replace(a, runs=a.runs[:1]).banner is None  # engines of one run share its workload


def test_a_percentile_the_sample_cannot_resolve_says_so(run_dir):
    assert fmt.unresolved(64, "p99") == "≈ the extreme of 64 values: unresolved, p99 needs 200"
    assert fmt.unresolved(600, "p99") is None and fmt.unresolved(4, "p50") is None
    table = tables.metric_table(analyse(run_dir).series)  # 600 requests: p99 is resolved, p99.9 is not
    assert "unresolved, p99.9 needs 2000" in table and "unresolved, p99 needs" not in table


def test_an_unresolved_headline_percentile_shows_no_interval_and_never_wins_clearly(run_dir):
    """The headline table too (#31 audit): a p99 of too few values is the sample's extreme, shown as such,
    with no bootstrap interval that would look tight, and ranked on its point value only."""
    from harness.judge.headline import headlines

    a = analyse(run_dir)
    few = [
        replace(
            er, summary={**er.summary, "latency": {m: {**b, "count": 64} for m, b in er.summary["latency"].items()}}
        )
        for er in a.series
    ]
    by_key = {h.key: h for h in headlines(few)}
    p99, p50 = by_key["ttft_p99"], by_key["ttft_p50"]
    assert all(e.extreme_of == 64 and e.low is None for e in p99.estimates.values())
    assert p99.point_only and not p99.clear and all(e.extreme_of is None for e in p50.estimates.values())
    table = markdown_summary(replace(a, series=few, verdict=replace(a.verdict, headlines=list(by_key.values()))))
    assert "(≈ the extreme of 64 values: unresolved)" in table
