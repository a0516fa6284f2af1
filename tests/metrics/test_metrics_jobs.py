"""The job metric (harness.metrics.jobs): a session's first scheduled arrival to its last token, its
percentiles over complete jobs and the job SLO's attainment over all jobs."""

from __future__ import annotations

import pytest

from harness.metrics import summarize
from harness.metrics.frame import records_frame
from harness.metrics.jobs import describe_jobs, job_completion, job_spans
from harness.metrics.slo import SLO
from tests.fixtures.records import make_record


def _records() -> list[dict]:
    return [
        # job a: turn 0 at 0 s, then two branches of turn 1 sent at 2 s; the slower ends at 2 + 0.5 + 0.3 = 2.8 s
        make_record("a0", t_scheduled=0.0, ttft=0.5, gaps=[0.1], session="a", turn=0),
        make_record("a1", t_scheduled=2.0, ttft=0.2, gaps=[0.1], session="a", turn=1),
        make_record("a2", t_scheduled=2.0, ttft=0.5, gaps=[0.3], session="a", turn=1),
        # job b: one request, 1.0 -> 1.4 s
        make_record("b0", t_scheduled=1.0, ttft=0.4, session="b", turn=0),
        # job c: its second request failed, so it has no completion time and misses any SLO
        make_record("c0", t_scheduled=0.5, ttft=0.1, session="c", turn=0),
        make_record("c1", t_scheduled=1.0, ttft=0.1, session="c", turn=1, error_type="http_500"),
    ]


def test_job_time_runs_from_the_first_arrival_to_the_last_token_of_the_last_request() -> None:
    spans = job_spans(records_frame(_records()))
    assert spans is not None
    assert spans.loc["a", "job_s"] == pytest.approx(2.8)  # the join waits for the slower branch
    assert spans.loc["b", "job_s"] == pytest.approx(0.4)
    assert spans["requests"].to_dict() == {"a": 3, "b": 1, "c": 2}
    assert spans["complete"].to_dict() == {"a": True, "b": True, "c": False}


def test_percentiles_cover_complete_jobs_and_the_slo_counts_failed_jobs_as_missed() -> None:
    jobs = job_completion(records_frame(_records()), slo_s=1.0, n_boot=200)
    assert jobs is not None
    assert (jobs["jobs"], jobs["complete"]) == (3, 2)
    assert jobs["completion_s"]["count"] == 2
    assert jobs["completion_s"]["percentiles"]["p50"]["value"] == pytest.approx((2.8 + 0.4) / 2)
    assert set(jobs["completion_s"]["percentiles"]) == {"p50", "p90", "p99"}
    slo = jobs["slo"]
    assert (slo["met"], slo["jobs"]) == (1, 3)  # b only: a took 2.8 s, c failed
    assert slo["value"] == pytest.approx(1 / 3) and 0 < slo["low"] < 1 / 3 < slo["high"] < 1
    assert job_completion(records_frame(_records()))["slo"] is None  # no limit, nothing to attain
    line = describe_jobs(jobs)
    assert line.startswith("jobs 3 (2 complete, 2.0 requests each); completion p50 1.60 s")
    assert line.endswith("job SLO 1 s met by 1 of 3 (33% [6%, 79%])")
    assert "p99 2.78 s (≈ the extreme of 2: unresolved)" in line  # two jobs resolve no tail (the judge's rule)


def test_the_summary_carries_jobs_and_records_without_sessions_have_none() -> None:
    summary = summarize(records_frame(_records()), slo=SLO(job_s=3.0), n_boot=50)
    assert summary["jobs"]["slo"]["met"] == 2 and summary["jobs"]["slo"]["limit_s"] == 3.0
    assert "job_s" not in summary["slo"]["slo"]  # a request's limits only: the job's is not a request's
    assert summarize(records_frame([make_record("x")]))["jobs"] is None
    assert SLO().to_json() == {"ttft_s": 2.0, "tpot_s": 0.2, "e2e_s": None}  # unset: absent, as before
