"""A twin of a multi-turn run replays it as sessions: each turn keeps its session, turn and think time (the twin
sends it when the previous answer is done), and its stand-in prompt starts with the previous turn's, so the
twin's prefix cache finds the history the real engine's did. Before, the twin replayed the turns open-loop
with distinct prompts (the suite's multi-turn pair: TTFT p50 +172%)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from harness.simulation import schedule_from_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite" / "runs"


def test_turns_of_a_session_share_their_history_and_sessions_do_not() -> None:
    schedule = schedule_from_run(RUN / "multi-turn-prefix")
    sessions: dict[str, list] = {}
    for item in schedule:
        assert item.session is not None
        sessions.setdefault(item.session, []).append(item)
    assert len(sessions) == 16
    for turns in sessions.values():
        assert [t.turn for t in turns] == list(range(len(turns)))
        assert all(t.think_s > 0 for t in turns[1:])
        for before, after in itertools.pairwise(turns):
            shared = min(len(before.request.prompt_token_ids), len(after.request.prompt_token_ids))
            assert list(after.request.prompt_token_ids[:shared]) == list(before.request.prompt_token_ids[:shared])
    firsts = [turns[0].request.prompt_token_ids[0] for turns in sessions.values()]
    assert len(set(firsts)) == len(firsts)  # no two conversations share a prefix


def test_a_run_without_sessions_keeps_distinct_prompts() -> None:
    schedule = schedule_from_run(RUN / "hol-blocking-continuous")
    assert all(item.session is None for item in schedule)
    assert len({item.request.prompt_token_ids[0] for item in schedule}) == len(schedule)


def test_a_fresh_turn_starts_a_new_stand_in_that_later_turns_extend(tmp_path: Path) -> None:
    rows = [
        {
            "request_id": f"r{i}",
            "arrival_s": 0.0,
            "input_tokens": n,
            "output_tokens": 1,
            "session": "s",
            "turn": i,
            "think_s": 0.0,
            **({"fresh": True} if i == 2 else {}),
        }
        for i, n in enumerate((10, 20, 5, 15))
    ]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = [list(item.request.prompt_token_ids) for item in schedule_from_run(tmp_path)]
    assert ids[1][:10] == ids[0]  # the history
    assert ids[2][0] != ids[0][0]  # the context started over: no shared prefix
    assert ids[3][:5] == ids[2]  # and the next turn extends the fresh one
