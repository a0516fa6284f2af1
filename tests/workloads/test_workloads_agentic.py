"""Agentic sessions (workloads/sessions.py): tool time between turns and fan-out branches joined before the
next turn, from a session file and from a spec; their prompts; and each bad field as one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from workloads import load_workload
from workloads.prompts import token_id_prompts

TURNS = [
    {"session": "s1", "turn": 0, "at_s": 0.0, "new_tokens": 100, "output_tokens": 20, "prefix_hash_ids": [7]},
    {"session": "s1", "turn": 1, "think_s": 1.0, "tool_s": 0.5, "new_tokens": 30, "output_tokens": 10},
    {"session": "s1", "turn": 1, "branch": 1, "new_tokens": 40, "output_tokens": 50},
    {"session": "s1", "turn": 1, "branch": 2, "new_tokens": 60, "output_tokens": 70},
    {"session": "s1", "turn": 2, "tool_s": 0.25, "new_tokens": 5, "output_tokens": 8},
]


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_branches_start_from_the_system_prompt_and_join_into_the_next_turn(tmp_path: Path) -> None:
    w = load_workload(str(_write(tmp_path, TURNS)))
    by = {(r.turn, r.branch): r for r in w.requests}
    assert by[(0, 0)].input_tokens == 512 + 100
    assert by[(1, 0)].input_tokens == 612 + 20 + 30  # history, its answer, new text
    assert (by[(1, 1)].input_tokens, by[(1, 2)].input_tokens) == (512 + 40, 512 + 60)  # system blocks + task
    assert by[(1, 1)].prefix_hash_ids == (7,)
    assert by[(2, 0)].input_tokens == 662 + 10 + 50 + 70 + 5  # every branch's answer joins the history
    assert by[(1, 0)].arrival_s == by[(1, 1)].arrival_s == 1.5  # think 1.0 + tool 0.5, branches together
    assert by[(2, 0)].arrival_s == 1.75 and by[(2, 0)].tool_s == 0.25
    prompts = token_id_prompts(w, 1000, seed=0)
    ids = {key: prompts[r.request_id] for key, r in by.items()}
    assert ids[(1, 1)][:512] == ids[(0, 0)][:512]  # a sub-agent shares the system block
    assert ids[(2, 0)][: len(ids[(1, 0)])] == ids[(1, 0)]  # the main line extends its own history
    assert ids[(1, 1)][512:] != ids[(0, 0)][512:552]
    described = w.describe()["agentic"]
    assert described == {
        "jobs": 1,
        "later_turns": 2,
        "fanned_out_turns": 1,
        "branches_max": 3,
        "tool_s": {"p50": 0.375, "p90": 0.475, "max": 0.5},
        "turns_per_job": {"p50": 3.0, "p90": 3.0, "max": 3.0},
        "think_s": {"p50": 1.0, "p90": 1.0, "max": 1.0},
        "fresh_turns": 0,
    }


def test_the_agentic_preset_describes_its_tool_time_and_fan_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workload", "describe", "agentic-fanout"]) == 0
    out = capsys.readouterr().out
    assert "agentic           8 jobs; 7 of 26 later turns fan out (up to 4 branches); tool time p50 0.498 s" in out
    plain = load_workload("agentic")  # a preset without tool time or fan-out keeps its requests and fingerprint
    assert "agentic" not in plain.describe() and not any(r.branch or r.tool_s for r in plain.requests)


BAD_FILES = {
    "branch out of order": ([TURNS[0], {**TURNS[2], "turn": 0, "branch": 2}], "2: branch: branch 2 of session 's1'"),
    "negative tool time": ([TURNS[0], {**TURNS[1], "tool_s": -2}], "2: tool_s: expected a number of seconds"),
    "tool time on turn 0": ([{**TURNS[0], "tool_s": 1.0}], "1: tool_s: only a later turn has tool_s"),
    "branch with its own pause": ([*TURNS[:2], {**TURNS[2], "tool_s": 1}], "3: tool_s: a branch shares its turn's"),
    "branch beyond the cap": ([*TURNS[:2], {**TURNS[2], "branch": 64}], "3: branch: expected an integer 0..63"),
    "NaN tool time": ([TURNS[0], {**TURNS[1], "tool_s": float("nan")}], "2: tool_s: expected a number of seconds"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_session_line_names_its_line_and_field(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, expected = BAD_FILES[case]
    path = _write(tmp_path, rows)
    assert main(["workload", "describe", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"batchmark: error: {path}:{expected}"), err


SPEC = "[sessions]\ncount = 2\nturns = 3\n"
BAD_SPECS = {
    "fan-out past the cap": ("fanout = 100\n", "sessions.fanout: draws must stay <= 64 branches"),
    "unbounded fan-out": ('fanout = { dist = "lognormal", median = 2, sigma = 1 }\n', "sessions.fanout: draws must"),
    "negative tool time": ("tool_ms = -5\n", "sessions.tool_ms.value: expected an integer > 0"),
    "tool time of a wrong type": ('tool_ms = "slow"\n', "sessions.tool_ms: expected a token count or a table"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_a_bad_agentic_spec_field_is_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra, expected = BAD_SPECS[case]
    path = tmp_path / "agent.toml"
    path.write_text(SPEC + extra)
    assert main(["workload", "describe", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err and expected in err, err
