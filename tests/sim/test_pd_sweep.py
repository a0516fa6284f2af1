"""`batchmark pd-sweep`: every P:D split of N simulated GPUs on one schedule, the best by goodput under the SLO
(harness/pd_sweep.py); bad input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.pd_sweep import Split, rank_splits, sweep_specs


def test_a_tiny_sweep_runs_every_split_and_names_the_best(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "pd-sweep",
        "--gpus",
        "3",
        "--workload",
        "chat-small",
        "--requests",
        "24",
        "--rate",
        "30",
        "--slo-job-s",
        "5",
        "--no-report",
        "--no-progress",
        "--out",
        str(tmp_path / "pd"),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    sweep = json.loads((tmp_path / "pd" / "pd_sweep.json").read_text())
    assert [(r["prefill"], r["decode"]) for r in sweep["rows"]] == [(3, 0), (1, 2), (2, 1)]  # colocated, then P:D
    metrics = json.loads((tmp_path / "pd" / "metrics.json").read_text())["engines"]
    splits = [r for r in sweep["rows"] if r["decode"]]
    best = max(r["goodput_rps"] for r in splits)
    assert sweep["best"]["goodput_rps"] == best == max(metrics[r["label"]]["slo"]["goodput_rps_steady"] for r in splits)
    assert f"best P:D split under the SLO (ttft 2000 ms, tpot 200 ms): {sweep['verdict'].split(' = ')[0]}" in printed
    # a job limit is in seconds, as given, and said apart: the ranking is by request goodput (it once printed
    # "job_s 5000 ms" among the ranking's limits, then nothing at all)
    assert "job SLO (job 5 s): not in the ranking" in printed and "5000 ms" not in printed


def test_a_split_without_a_measured_goodput_is_not_ranked_and_none_is_cannot_tell() -> None:
    splits = [Split("p1d1", 1, 1, 2), Split("p1d2", 1, 2, 3)]
    engines = {
        "p1d1": {"slo": {"goodput_rps_steady": None, "goodput_rps_steady_reason": "window too short"}},
        "p1d2": {"slo": {"goodput_rps_steady": 3.5, "attainment": 0.9}},
    }
    assert rank_splits(splits, engines)["verdict"] == "1:2"
    assert rank_splits(splits[:1], engines)["verdict"] == "cannot tell"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--gpus", "1"], "--gpus 1: need a multiple"),
        (["--gpus", "3", "--replica", "sim:tp=2"], "--gpus 3: need a multiple of the replica's 2 GPU(s)"),
        (["--gpus", "2", "--replica", "http:url=http://x"], "give a sim:... spec"),
        (["--gpus", "2", "--engine", "sim"], "--engine is not taken"),
        (["--gpus", "2", "--disagg", "bandwidth_gbps=0"], "bandwidth_gbps"),
    ],
)
def test_bad_sweeps_are_one_line(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pd-sweep", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "x").exists()


def test_specs_split_the_gpus_by_the_replicas_tp() -> None:
    specs = sweep_specs(8, "sim:model=llama-3.1-70b,hardware=h100,tp=4", colocated=False)
    assert [(s.prefill, s.decode) for s, _ in specs] == [(1, 1)]
    assert specs[0][1].startswith("disagg:prefill=1,decode=1,label=p1d1,replica=sim:")
