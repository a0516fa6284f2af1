"""Sessions, ShareGPT files and traces with values of the right type but beyond any sense (issue #32): one line
naming the field, exit 2, no traceback, and nothing run (the --out directory is not created)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from harness.cli import main

TURN0 = {"session": "s", "turn": 0, "at_s": 0.0, "new_tokens": 10, "output_tokens": 5}


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path, field: str) -> None:
    out = tmp_path / "run"
    argv = ["run", "--workload", str(path), "--engine", "zero", "--out", str(out), "--no-report", "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("batchmark: error: ") and "Traceback" not in err, err
    assert field in err, err
    assert not out.exists()
    assert main(["workload", "describe", str(path)]) == 2
    assert field in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"new_tokens": 10**12}, "new_tokens"),
        ({"output_tokens": 10**12}, "output_tokens"),
        ({"at_s": 1e300}, "at_s"),  # the run waited for it forever
        ({"prefix_hash_ids": list(range(200_000))}, "prefix_hash_ids"),  # 102M tokens: MemoryError
        ({"at_s": -1}, "at_s"),
        ({"at_s": float("nan")}, "at_s"),
        ({"new_tokens": 1.5}, "new_tokens"),
        ({"new_tokens": True}, "new_tokens"),
        ({"session": ""}, "session"),
        ({"turn": 2**70}, "turn"),
    ],
)
def test_a_session_turn_beyond_bounds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, field: str
) -> None:
    path = tmp_path / "sessions.jsonl"
    path.write_text(json.dumps(TURN0 | change) + "\n")
    refused(tmp_path, capsys, path, field)


def conversation(cid: str) -> dict:
    return {"id": cid, "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[" * 100_000 + "]" * 100_000, "json"),  # RecursionError
        (json.dumps([conversation("a"), conversation("a")]), "[1].id"),  # was merged into one session
        (json.dumps([conversation(1), conversation("1")]), "[1].id"),  # one id once read as text
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "json"),  # an object: read as a trace row, a RecursionError
        (json.dumps([{"id": "a", "conversations": "x"}]), "[0].conversations"),
    ],
)
def test_a_sharegpt_file_without_sense_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, field: str
) -> None:
    path = tmp_path / "sharegpt.json"
    path.write_text(text)
    refused(tmp_path, capsys, path, field)


@pytest.mark.parametrize("arrival", ["1e308", "inf", "1e400", "nan", "-1e308"])
def test_an_arrival_of_1e308_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], arrival: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(f"arrival_s,input_tokens,output_tokens\n0,10,10\n{arrival},10,10\n")
    refused(tmp_path, capsys, path, "arrival_s")


SESSIONS_SPEC = "[sessions]\ncount = 3\nrate = 1.0\nturns = 2\nfirst_tokens = 10\nnew_tokens = 5\noutput = 5\n"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("rate = 1.0", "rate = nan"), "sessions.rate"),
        (("output = 5", "output = 5\nthink_s = 1e300"), "sessions.think_s"),
        (("rate = 1.0", "rate = inf"), "sessions.rate"),
        (("count = 3", "count = 1000000000"), "sessions.count"),
        (("turns = 2", "turns = 0"), "sessions.turns"),
        (("[sessions]", "duration_s = inf\n[sessions]"), "duration_s"),  # read by nothing, so never checked
    ],
)
def test_a_senseless_session_spec_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], field: str
) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(SESSIONS_SPEC.replace(*edit))
    refused(tmp_path, capsys, path, field)


def test_arrivals_years_apart_within_the_bound_run_in_little_memory(tmp_path: Path) -> None:
    """Nine years apart is within the ten-year bound: describe's peak per second and the run's warning timeline
    were a bin per second of span (2.2 GiB each); on the simulator it runs in virtual time."""
    path = tmp_path / "trace.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,10,10\n300000000,10,10\n")
    out = tmp_path / "run"
    tracemalloc.start()  # numpy reports its arrays to tracemalloc
    try:
        assert main(["workload", "describe", str(path)]) == 0
        argv = ["run", "--workload", str(path), "--engine", "sim", "--out", str(out), "--no-report", "--no-progress"]
        assert main(argv) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (out / "metrics.json").exists() and peak < 500 * 2**20, peak
