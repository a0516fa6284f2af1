"""The agentic preset in the simulator: tool time between turns, fan-out branches joined before the next
turn, and the job metric in metrics.json, the console, summary.md and the report."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.metrics import load_records
from reports.markdown import markdown_summary
from workloads import load_workload


@pytest.fixture(scope="module")
def agentic_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("agentic") / "run"
    argv = ["run", "--out", str(out), "--no-progress", "--engine", "sim", "--workload", "agentic-fanout"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*argv, "--slo-job-s", "5"]) == 0
    return out, printed.getvalue()


def test_turns_wait_for_every_branch_and_the_tool_time(agentic_run: tuple[Path, str]) -> None:
    out, _ = agentic_run
    workload = load_workload("agentic-fanout")
    plan = {r.request_id: r for r in workload.requests}
    assert sum(1 for r in workload.requests if r.branch) > 5 and all(r.tool_s >= 0 for r in workload.requests)
    records = load_records(out / "records.jsonl").set_index("request_id")
    turns: dict[tuple[str, int], list[str]] = {}
    for rid, r in plan.items():
        turns.setdefault((r.session, r.turn), []).append(rid)
    checked = 0
    for (session, turn), rids in turns.items():
        sent = records.loc[rids, "t_scheduled"]
        assert sent.max() - sent.min() < 1e-9  # a turn's branches go together
        if turn == 0:
            continue
        joined = records.loc[turns[(session, turn - 1)], "t_finish"].max()  # the last branch of the turn before
        main_request = next(plan[rid] for rid in rids if plan[rid].branch == 0)
        assert sent.min() == pytest.approx(joined + main_request.tool_s, abs=1e-6)
        checked += 1
    assert checked == sum(1 for (_, t) in turns if t)


def test_the_job_metric_reaches_metrics_json_console_summary_and_report(agentic_run: tuple[Path, str]) -> None:
    out, printed = agentic_run
    jobs = json.loads((out / "metrics.json").read_text())["engines"]["sim-continuous"]["jobs"]
    assert jobs["jobs"] == 8 and jobs["complete"] == 8
    p50 = jobs["completion_s"]["percentiles"]["p50"]
    assert p50["ci_low"] <= p50["value"] <= p50["ci_high"]
    assert jobs["slo"]["limit_s"] == 5.0 and 0 <= jobs["slo"]["met"] <= 8
    assert "sim-continuous: jobs 8 (8 complete" in printed and "job SLO 5 s met by" in printed
    assert "### Jobs (whole sessions)" in markdown_summary(out)
    assert "Jobs: whole sessions" in (out / "report.html").read_text()


@pytest.mark.parametrize(("value", "why"), [("nan", "must be a finite number > 0"), ("-1", "must be > 0")])
def test_a_bad_job_slo_is_one_line_and_exit_2(value: str, why: str, capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:  # fmt: skip
    code = main(["run", "--engine", "sim", "--workload", "agentic-fanout", "--out", str(tmp_path / "r"),
                 "--slo-job-s", value])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err == f"batchmark: error: --slo-job-s {value}: {why}\n"
    assert not (tmp_path / "r").exists()  # validated before any work
