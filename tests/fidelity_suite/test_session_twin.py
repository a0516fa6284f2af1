"""A twin of a multi-turn run replays it as sessions: each turn keeps its session, turn and think time (the twin
sends it when the previous answer is done), and its stand-in prompt starts with the previous turn's, so the
twin's prefix cache finds the history the real engine's did. Before, the twin replayed the turns open-loop
with distinct prompts (the suite's multi-turn pair: TTFT p50 +172%)."""

from __future__ import annotations

import itertools
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
