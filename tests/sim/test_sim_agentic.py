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
def test_a_bad_job_slo_is_one_line_and_exit_2(
    value: str, why: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        ["run", "--engine", "sim", "--workload", "agentic-fanout", "--out", str(tmp_path / "r"), "--slo-job-s", value]
    )
    err = capsys.readouterr().err
    assert code == 2 and err == f"batchmark: error: --slo-job-s {value}: {why}\n"
    assert not (tmp_path / "r").exists()  # validated before any work


def test_real_weka_sessions_replay_their_recorded_tool_time_and_fan_out(tmp_path: Path) -> None:
    """Two real Claude Code conversations (tests/fixtures/weka): each later turn goes its recorded tool or
    think time after the join of the turn before, and the job metric covers both sessions."""
    slice_dir = Path(__file__).resolve().parents[1] / "fixtures" / "weka"
    spec = tmp_path / "weka.toml"
    spec.write_text(f'[sessions]\nfile = "{slice_dir}"\nformat = "weka"\nrate = 1.0\n')
    out = tmp_path / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        argv = ["run", "--out", str(out), "--no-progress", "--no-report", "--engine", "sim", "--workload", str(spec)]
        assert main(argv) == 0  # no report: this test reads the records and metrics.json
    plan = {r.request_id: r for r in load_workload(str(spec)).requests}
    records = load_records(out / "records.jsonl").set_index("request_id")
    turns: dict[tuple[str, int], list[str]] = {}
    for rid, r in plan.items():
        turns.setdefault((r.session, r.turn), []).append(rid)
    waits = []
    for (session, turn), rids in turns.items():
        if turn:
            main_line = next(plan[rid] for rid in rids if plan[rid].branch == 0)
            joined = records.loc[turns[(session, turn - 1)], "t_finish"].max()
            sent = records.loc[rids, "t_scheduled"].min()
            assert sent == pytest.approx(joined + main_line.think_s + main_line.tool_s, abs=1e-6)
            waits.append(main_line.think_s + main_line.tool_s)
    # trace_0277's turn 1: its tool result came 228 - 211.347 s after its three sub-agents' join, as recorded
    assert len(waits) == 10 and pytest.approx(228.0 - 211.347) in waits
    jobs = json.loads((out / "metrics.json").read_text())["engines"]["sim-continuous"]["jobs"]
    assert jobs["jobs"] == 2 and jobs["complete"] == 2


def test_the_weka_preset_first_sessions_reach_the_job_metric(tmp_path: Path) -> None:
    """The bundled sessions (workloads/traces/weka_agentic), cut to the first three whole sessions, in the
    simulator: each session cut before its first turn past the simulated model's 131,072-token context (a
    note says so), every request answered, and each session one complete job in metrics.json."""
    spec = tmp_path / "weka3.toml"
    bundled = Path(__file__).resolve().parents[2] / "workloads" / "traces" / "weka_agentic" / "sessions.jsonl.gz"
    spec.write_text(f'[sessions]\nfile = "{bundled}"\nformat = "sessions"\nfirst_sessions = 3\n')
    workload = load_workload(str(spec), max_context=131_072)
    assert {r.session for r in workload.requests} == {"trace_0001", "trace_0002", "trace_0003"}
    assert "2 sessions cut at the first turn past the context of 131072 tokens" in workload.notes
    out = tmp_path / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        argv = ["run", "--out", str(out), "--no-progress", "--no-report", "--engine", "sim", "--workload", str(spec)]
        assert main([*argv, "--max-context", "131072", "--slo-job-s", "3600"]) == 0  # no report: not read here
    assert len(load_records(out / "records.jsonl")) == len(workload.requests)
    jobs = json.loads((out / "metrics.json").read_text())["engines"]["sim-continuous"]["jobs"]
    assert jobs["jobs"] == 3 and jobs["complete"] == 3 and jobs["slo"]["limit_s"] == 3600.0
