"""WEKA agentic-coding traces as sessions (workloads/readers/weka.py): a hand-made conversation whose every
wait, length, branch and fresh turn is known, the real slice in tests/fixtures/weka, the bundled preset,
the converter command, and each bad field as one line, exit 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from workloads import load_workload
from workloads.prompts import token_id_prompts
from workloads.readers.weka import WekaFacts, read_weka

SLICE = Path(__file__).resolve().parents[1] / "fixtures" / "weka"


def _conversation() -> dict[str, Any]:
    """Request 0 fans out to two sub-agents; then a tool result, typed text, a compaction and two requests
    whose timing fields are missing."""
    sub_a = {
        "t": 10.0,
        "type": "subagent",
        "duration_ms": 7000,  # ran 3..10 s
        "requests": [{"t": 0.0, "in": 500, "out": 20}, {"t": 3.0, "in": 600, "out": 40}],
    }
    sub_b = {"t": 12.0, "type": "subagent", "duration_ms": 9000, "requests": [{"t": 0.0, "in": 300, "out": 30}]}
    return {
        "id": "c1",
        "requests": [
            {"t": 0.0, "type": "n", "in": 1000, "out": 100, "api_time": 2.0, "input_types": ["text"]},
            sub_a,
            sub_b,
            # 1000 + 100 + 40 + 30 history, then 50 new: the tool result, sent 3 s after the last sub-agent ended
            {"t": 15.0, "type": "s", "in": 1220, "out": 10, "api_time": 1.0, "input_types": ["tool_result"]},
            # typed text 4 s after the answer (15 + 1)
            {"t": 20.0, "type": "n", "in": 1300, "out": 5, "api_time": 1.0, "input_types": ["text"]},
            # shorter than the prompt before: compacted, the context starts over; no api_time
            {"t": 30.0, "type": "n", "in": 400, "out": 7, "input_types": ["tool_result"]},
            {"t": 40.0, "type": "n", "in": 420, "out": 8, "think_time": 3.5, "input_types": ["tool_result"]},
            {"t": 50.0, "type": "n", "in": 440, "out": 9, "input_types": ["tool_result"]},  # no timing at all
        ],
    }


def test_a_known_conversation_becomes_these_turns(tmp_path: Path) -> None:
    (tmp_path / "c1.json").write_text(json.dumps(_conversation()))
    turns, facts = read_weka(tmp_path / "c1.json", "c1.json", 1.0, 0)
    got = [(t.turn, t.branch, t.new_tokens, t.output_tokens, t.think_s, t.tool_s, t.fresh) for t in turns]
    assert got == [
        (0, 0, 1000, 100, 0.0, 0.0, False),
        (0, 1, 500, 40, 0.0, 0.0, False),  # a sub-agent: its first prompt, its final answer
        (0, 2, 300, 30, 0.0, 0.0, False),
        (1, 0, 50, 10, 0.0, 3.0, False),  # waits for the later sub-agent (ended at 12), not request 0 (at 2)
        (2, 0, 70, 5, 4.0, 0.0, False),  # typed text: think time
        (3, 0, 400, 7, 0.0, 9.0, True),  # from the previous answer's end (20 + 1)
        (4, 0, 13, 8, 0.0, 3.5, False),  # request 3 has no api_time: its successor's think_time
        (5, 0, 12, 9, 0.0, 10.0, False),  # neither: the gap between arrivals, an upper bound
    ]
    assert turns[0].at_s == 0.0
    assert facts == WekaFacts(
        sub_agent_requests=3,
        waits_from_think_time=1,
        waits_upper_bound=1,
        fresh_turns=1,
        input_tokens_trace=1000 + 1220 + 1300 + 400 + 420 + 440,
        input_tokens_replayed=1000 + 1220 + 1300 + 400 + 420 + 440,
    )


def test_the_known_conversation_replays_its_dag_and_prompts(tmp_path: Path) -> None:
    (tmp_path / "c1.json").write_text(json.dumps(_conversation()))
    spec = tmp_path / "agent.toml"
    spec.write_text('[sessions]\nfile = "c1.json"\nformat = "weka"\n')
    w = load_workload(str(spec))
    by = {(r.turn, r.branch): r for r in w.requests}
    assert [by[(k, 0)].input_tokens for k in range(6)] == [1000, 1220, 1300, 400, 420, 440]  # as recorded
    assert by[(3, 0)].fresh and not by[(4, 0)].fresh
    ids = {key: v for key, r in by.items() for v in [token_id_prompts(w, 1000, seed=0)[r.request_id]]}
    assert ids[(2, 0)][:1220] == ids[(1, 0)]  # the main line extends its history
    assert ids[(3, 0)][:400] != ids[(2, 0)][:400] and len(ids[(3, 0)]) == 400  # a fresh turn starts over
    assert ids[(4, 0)][:400] == ids[(3, 0)]  # and the turns after it extend it
    described = w.describe()["agentic"]
    assert (described["jobs"], described["fanned_out_turns"], described["fresh_turns"]) == (1, 0, 1)
    assert described["turns_per_job"]["max"] == 6.0


def test_the_real_slice_reads_its_sub_agents_as_branches() -> None:
    turns, facts = read_weka(SLICE, "weka", 1.0, 0)
    assert {t.session for t in turns} == {"trace_0026", "trace_0277"}
    agent = [t for t in turns if t.session == "trace_0277"]
    assert [(t.turn, t.branch) for t in agent if t.branch] == [(0, 1), (0, 2), (0, 3), (6, 1)]
    first = next(t for t in agent if t.turn == 1)
    # recorded: sub-agents ended at 79.224, 183.906, 211.347 s; the tool result came at 228 s
    assert first.tool_s == pytest.approx(228.0 - 211.347) and first.think_s == 0.0
    assert facts.sub_agent_requests == 4 + 12 + 17 + 11 and facts.late_sub_agents == 0


def test_the_bundled_presets_are_the_converted_traces() -> None:
    w = load_workload("weka-agentic-all")
    d = w.describe()
    assert d["requests"] == 48_721 and d["input_tokens"]["max"] == 894_371
    a = d["agentic"]
    assert (a["jobs"], a["later_turns"], a["fanned_out_turns"], a["branches_max"]) == (710, 47_948, 33, 4)
    assert (a["tool_s"]["p50"], a["tool_s"]["p90"]) == (7.35, 63.363)
    assert (a["turns_per_job"]["p50"], a["fresh_turns"]) == (45.0, 422)
    assert sum(1 for r in w.requests if r.branch) == 63
    first = load_workload("weka-agentic")  # the first 16 sessions to start, whole
    assert len({r.session for r in first.requests}) == 16 and len(first.requests) == 1_746
    assert {r.session for r in first.requests} <= {r.session for r in w.requests}


def test_convert_writes_a_session_file_that_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl.gz"
    assert main(["workload", "convert-weka", str(SLICE), str(out), "--rate", "0.5"]) == 0
    assert "2 sessions, 16 requests written" in capsys.readouterr().out
    lines = [json.loads(line) for line in gzip.decompress(out.read_bytes()).decode().splitlines()]
    assert lines[0] == {"session": "trace_0026", "turn": 0, "at_s": 0.0, "new_tokens": 15291, "output_tokens": 2282}
    direct = load_workload(str(_spec(tmp_path, SLICE, "weka", 0.5)))
    converted = load_workload(str(_spec(tmp_path, out, "sessions", 0.5)))
    assert [(r.input_tokens, r.output_tokens, r.tool_s, r.branch) for r in converted.requests] == [
        (r.input_tokens, r.output_tokens, round(r.tool_s, 3), r.branch) for r in direct.requests
    ]


def _spec(tmp_path: Path, file: Path, fmt: str, rate: float) -> Path:
    path = tmp_path / f"{fmt}.toml"
    path.write_text(f'[sessions]\nfile = "{file}"\nformat = "{fmt}"\nrate = {rate}\n')
    return path


BAD = {
    "a malformed line": (
        '{"id": "a", "requests": [{"t": 0, "type": "n", "in": 5, "out": 1}]}\n{"id": "b", ',
        ":2: json: not valid JSON",
    ),
    "a wrong-typed length": (
        '{"id": "a", "requests": [{"t": 0, "type": "n", "in": "5", "out": 1}]}\n',
        ":1: requests[0].in: expected an integer 1..",
    ),
    "an unknown request type": (
        '{"id": "a", "requests": [{"t": 0, "type": "x", "in": 5, "out": 1}]}\n',
        ":1: requests[0].type: expected n, s or subagent",
    ),
    "a sub-agent first": (
        '{"id": "a", "requests": [{"t": 0, "type": "subagent", "requests": []}]}\n',
        ":1: requests[0].type: a sub-agent before the conversation's first request",
    ),
    "a NaN time": (
        '{"id": "a", "requests": [{"t": NaN, "type": "n", "in": 5, "out": 1}]}\n',
        ":1: requests[0].t: expected a number of seconds",
    ),
    "two conversations with one id": (
        '{"id": "a", "requests": [{"t": 0, "type": "n", "in": 5, "out": 1}]}\n' * 2,
        ":2: id: conversation id 'a' is also in",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_file_line_and_field(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = BAD[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    assert main(["workload", "convert-weka", str(path), str(tmp_path / "out.jsonl")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"batchmark: error: {path}{expected}"), err
    assert not (tmp_path / "out.jsonl").exists()


def test_fresh_is_a_boolean_and_a_cut_gzip_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"session": "s", "turn": 0, "at_s": 0, "new_tokens": 5, "output_tokens": 1},
        {"session": "s", "turn": 1, "new_tokens": 5, "output_tokens": 1, "fresh": "yes"},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["workload", "describe", str(path)]) == 2
    assert f"{path}:2: fresh: expected true or false" in capsys.readouterr().err
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(path.read_bytes())[:20])
    assert main(["workload", "describe", str(_spec(tmp_path, cut, "sessions", 1.0))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{cut}:1: file: not a whole gzip file" in err, err


def test_first_sessions_is_for_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "gen.toml"
    spec.write_text("[sessions]\ncount = 4\nfirst_sessions = 2\n")
    assert main(["workload", "describe", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{spec}:3: sessions.first_sessions: keeps the first sessions of a file" in err
    one = _spec(tmp_path, SLICE, "weka", 1.0)
    one.write_text(one.read_text() + "first_sessions = 1\n")
    assert {r.session for r in load_workload(str(one)).requests} == {"trace_0026"}  # the first to start
