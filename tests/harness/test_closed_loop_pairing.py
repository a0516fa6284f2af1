"""Closed-loop runs of several engines pair by request and user: their scheduled times legitimately differ."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.errors import HarnessInputError
from harness.metrics import load_records, paired_deltas, records_frame
from tests.fixtures.records import make_record


def test_two_engines_in_a_closed_loop_end_with_metrics(tmp_path, capsys):
    # before: "error: 64 request(s) scheduled at different times in the two runs" (exit 2, no metrics.json)
    argv = [
        "run",
        "--workload",
        "closed-loop-small",
        "--requests",
        "24",
        "--think-time",  # not the preset's 0.5 s: users' pauses were most of the run; pairing is by user either way
        "0.05",
        "--engine",
        "zero",
        "--engine",
        "zero:label=zero2",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    pair = metrics["comparison"]["pairs"]["zero2"]
    assert pair["paired_requests"] == 24 and pair["paired_on"] == ["request_id", "user"]
    records = load_records(tmp_path / "records.jsonl")
    by_engine = {e: g.set_index("request_id")["user"].sort_index() for e, g in records.groupby("engine")}
    assert (by_engine["zero"] == by_engine["zero2"]).all()  # each user sent the same requests in both runs
    assert sorted(set(by_engine["zero"].astype(int))) == list(range(8))  # the preset's 8 users, round-robin


def test_open_loop_pairing_still_refuses_different_schedules():
    a = records_frame([make_record(f"r{i}", t_scheduled=float(i)) for i in range(5)])
    b = records_frame([make_record(f"r{i}", t_scheduled=float(i) + 0.5) for i in range(5)])
    with pytest.raises(HarnessInputError, match="scheduled at different times"):
        paired_deltas(a, b)
    closed_a = records_frame([make_record(f"r{i}", t_scheduled=float(i), user=i % 2) for i in range(5)])
    closed_b = records_frame([make_record(f"r{i}", t_scheduled=float(i) + 0.5, user=i % 2) for i in range(5)])
    assert len(paired_deltas(closed_a, closed_b)) == 5


def test_a_simulated_closed_loop_gives_users_the_same_requests(tmp_path, capsys):
    # the virtual-time closed loop handed each ready user the next request of a shared queue, so a
    # simulated run and a measured one gave the same request to different users and could not pair
    argv = [
        "run",
        "--workload",
        "closed-loop-small",
        "--requests",
        "24",
        "--think-time",  # not the preset's 0.5 s: users' pauses were most of the run; pairing is by user either way
        "0.05",
        "--engine",
        "zero",
        "--engine",
        "sim:max_running=4",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    records = load_records(tmp_path / "records.jsonl")
    by_engine = {e: g.set_index("request_id")["user"].sort_index() for e, g in records.groupby("engine")}
    assert set(by_engine) == {"zero", "sim-continuous"}
    assert (by_engine["zero"] == by_engine["sim-continuous"]).all()
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["comparison"]["pairs"]["sim-continuous"]["paired_requests"] == 24
