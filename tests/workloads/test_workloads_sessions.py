"""Multi-turn workloads: session files, ShareGPT conversations and generated sessions become turns whose
prompts extend the one before; malformed session files are one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.metrics.prefix_cache import predicted_hit_rate
from tests.workloads.test_workloads_cli_errors import one_error_line
from workloads import load_workload, token_id_prompts

SESSION_LINES = [
    {"session": "a", "turn": 0, "at_s": 0.0, "new_tokens": 40, "output_tokens": 5, "prefix_hash_ids": [7]},
    {"session": "b", "turn": 0, "at_s": 0.5, "new_tokens": 30, "output_tokens": 4, "prefix_hash_ids": [7]},
    {"session": "a", "turn": 1, "think_s": 2.0, "new_tokens": 10, "output_tokens": 6},
    {"session": "a", "turn": 2, "think_s": 1.0, "new_tokens": 8, "output_tokens": 3},
]


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_session_file_gives_turns_whose_prompts_extend_the_history(tmp_path: Path) -> None:
    w = load_workload(str(write_lines(tmp_path / "chat.jsonl", SESSION_LINES)))
    turns = {(r.session, r.turn): r for r in w.requests}
    assert [r.input_tokens for r in (turns["a", 0], turns["a", 1], turns["a", 2])] == [552, 567, 581]
    assert turns["a", 1].arrival_s == 2.0 and turns["a", 1].think_s == 2.0  # a lower bound: answers take time
    prompts = token_id_prompts(w, 8192, seed=0)
    a0, a1, a2, b0 = (prompts[turns[k].request_id] for k in (("a", 0), ("a", 1), ("a", 2), ("b", 0)))
    assert a1[:552] == a0 and a2[:567] == a1  # the history, then the answer, then new text
    assert b0[:512] == a0[:512] and b0[512:] != a0[512:542]  # hash id 7: one shared system block
    # an unbounded cache reuses turn 0's block (in b) and each earlier turn's full blocks
    predicted = predicted_hit_rate([prompts[r.request_id] for r in w.requests], 16)
    assert predicted["reusable_tokens"] == 512 + 544 + 560


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (
            [{"session": "a", "turn": 1, "new_tokens": 3, "output_tokens": 2}],
            "1: turn: turn 1 of session 'a' comes before the session starts (its turn 0)",
        ),
        (
            [SESSION_LINES[0], {"session": "a", "turn": 2, "new_tokens": 3, "output_tokens": 2}],
            "2: turn: turn 2 of session 'a' has no parent: the turn before it is 0, not 1",
        ),
        (
            [{"session": "a", "turn": 0, "at_s": 0, "new_tokens": 3, "output_tokens": 2, "prefix_hash_ids": [1, "x"]}],
            "1: prefix_hash_ids: expected a list of integers, found [1, 'x']",
        ),
        (
            [{"session": "a", "turn": 0, "at_s": 0, "new_tokens": 3, "output_tokens": 2, "prefix_hash_ids": 5}],
            "1: prefix_hash_ids: expected a list of integers, found 5",
        ),
        (
            [{"session": "a", "turn": 0, "new_tokens": 3, "output_tokens": 2}],
            "1: at_s: turn 0 needs the session's start time in seconds",
        ),
    ],
    ids=["turn before its session", "missing parent", "hash ids not ints", "hash ids not a list", "no start"],
)
def test_malformed_session_files_are_one_line(tmp_path: Path, capsys, rows: list[dict], expected: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", rows)
    assert one_error_line(capsys, str(path)) == f"{path}:{expected}"


def test_sharegpt_conversations_are_sessions(tmp_path: Path) -> None:
    conversations = [
        {
            "id": "c1",
            "conversations": [
                {"from": "system", "value": "s" * 40},
                {"from": "human", "value": "h" * 80},
                {"from": "gpt", "value": "g" * 120},
                {"from": "human", "value": "h" * 20},
                {"from": "gpt", "value": "g" * 9},
            ],
        },
        {"id": "c2", "conversations": [{"from": "human", "value": "only a question"}]},
    ]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(conversations))
    w = load_workload(str(path))
    assert [(r.session, r.turn, r.input_tokens, r.output_tokens) for r in w.requests] == [
        ("c1", 0, 30, 30),  # (40 + 80) / 4 characters per token
        ("c1", 1, 65, 3),  # 30 + 30 + 5
    ]


def test_session_presets_load_and_refuse_sampling() -> None:
    chat = load_workload("multi-turn-chat")
    assert len({r.session for r in chat.requests}) == 16 and max(r.turn for r in chat.requests) >= 3
    agentic = load_workload("agentic")
    assert all(r.prefix_hash_ids == agentic.requests[0].prefix_hash_ids for r in agentic.requests if r.turn == 0)
    with pytest.raises(ValueError, match="requests: does not apply to sessions"):
        load_workload("agentic", requests=5)


def test_text_prompts_of_a_session_extend_the_history_in_tokens(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    from workloads import as_tokenizer, text_prompts

    tok = as_tokenizer(Tokenizer.from_file(str(Path(__file__).parents[2] / "engines/model/tokenizer/tokenizer.json")))
    w = load_workload(str(write_lines(tmp_path / "chat.jsonl", SESSION_LINES)))
    texts, mismatches = text_prompts(w, tok, seed=0)
    assert mismatches == []
    turns = {(r.session, r.turn): tok.encode(texts[r.request_id]) for r in w.requests}
    assert [len(turns["a", k]) for k in range(3)] == [552, 567, 581]
    assert turns["a", 1][:552] == turns["a", 0] and turns["a", 2][:567] == turns["a", 1]  # the same tokens
