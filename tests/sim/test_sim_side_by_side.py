"""Simulated engines of one trial run side by side, a process each, and write what they would have written in
turn: the same records, in the same order, and the same step traces."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from harness.cli import main

ENGINES = [
    "--engine",
    "sim:scheduler=static,model=llama-3.1-8b,hardware=h100",
    "--engine",
    "sim:model=llama-3.1-8b,hardware=h100",
]


def run_argv(out: Path) -> list[str]:
    return [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "40",
        *ENGINES,
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]


def simulate(out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(run_argv(out)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def in_turns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same trial one engine after the other, once for both tests that compare a side-by-side run with it."""
    import harness.run

    out = tmp_path_factory.mktemp("turns") / "turns"
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(harness.run, "side_by_side", lambda specs, requests: False)
        assert main(run_argv(out)) == 0
    assert "side by side" not in printed.getvalue()
    return out


def test_side_by_side_writes_what_one_after_the_other_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], in_turns: Path
) -> None:
    import harness.side_by_side

    monkeypatch.setattr(harness.side_by_side, "usable_cores", lambda: 2)  # a 1-core runner still runs both ways
    monkeypatch.setattr(harness.side_by_side, "MIN_REQUESTS", 40)
    monkeypatch.setattr(harness.side_by_side, "others_load", lambda: 0.0)
    printed = simulate(tmp_path / "side", capsys)
    assert "side by side (2 processes)" in printed
    side, turns = tmp_path / "side", in_turns
    assert (side / "records.jsonl").read_bytes() == (turns / "records.jsonl").read_bytes()
    for trace in sorted((turns / "steps").glob("*.jsonl")):
        assert (side / "steps" / trace.name).read_bytes() == trace.read_bytes()
    assert not list(side.glob(".*.records.jsonl"))  # the parts were folded in
    metrics = [json.loads((d / "metrics.json").read_text())["engines"] for d in (side, turns)]
    assert metrics[0] == metrics[1]
    manifest = json.loads((side / "manifest.json").read_text())
    assert all(o["machine"]["busy"] is False for o in manifest["outcomes"])  # virtual time is never "busy"


def failing_summary(*args: object) -> None:
    """A summary that fails in a side-by-side process (module level: a spawned process imports it by name)."""
    raise RuntimeError("a summary that fails")


def test_a_summary_failing_beside_its_simulation_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], in_turns: Path
) -> None:
    """The records are appended and the parent summarises the engine runs itself, as if nothing had failed."""
    import harness.run
    import harness.side_by_side

    monkeypatch.setattr(harness.side_by_side, "usable_cores", lambda: 2)
    monkeypatch.setattr(harness.side_by_side, "MIN_REQUESTS", 40)
    monkeypatch.setattr(harness.side_by_side, "others_load", lambda: 0.0)
    real = harness.run.replay_side_by_side
    monkeypatch.setattr(harness.run, "replay_side_by_side", lambda *args: real(*args[:7], failing_summary))
    assert "side by side (2 processes)" in simulate(tmp_path / "failing", capsys)
    failing, turns = tmp_path / "failing", in_turns
    assert (failing / "records.jsonl").read_bytes() == (turns / "records.jsonl").read_bytes()
    metrics = [json.loads((d / "metrics.json").read_text())["engines"] for d in (failing, turns)]
    assert metrics[0] == metrics[1] and len(metrics[0]) == 2


def test_side_by_side_only_for_large_all_simulated_trials_with_a_core_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.side_by_side as sbs
    from harness.engine_specs import parse_engine_specs

    sims = parse_engine_specs(["sim:scheduler=static", "sim"], {})
    mixed = parse_engine_specs(["sim", "continuous"], {})
    monkeypatch.setattr(sbs, "usable_cores", lambda: 2)
    monkeypatch.setattr(sbs, "others_load", lambda: 0.0)  # a quiet 2-core machine
    assert sbs.side_by_side(sims, sbs.MIN_REQUESTS)
    assert not sbs.side_by_side(sims, sbs.MIN_REQUESTS - 1)  # a process start would cost more than it saves
    assert not sbs.side_by_side(mixed, sbs.MIN_REQUESTS)  # a measured engine's timings need the machine alone
    assert not sbs.side_by_side(sims[:1], sbs.MIN_REQUESTS)
    monkeypatch.setattr(sbs, "others_load", lambda: 1.0)  # another busy process: no core to spare
    assert not sbs.side_by_side(sims, sbs.MIN_REQUESTS)
