"""`sim fit` says when a profile pools several engines' steps (issue 30: one pooled profile priced a static batch's
held slots and a continuous engine's decode alike); a profile of one engine says nothing of the kind."""

from __future__ import annotations

from harness.simulation import pooling_note


def test_a_profile_of_two_engines_says_it_pools_them_and_how_to_split() -> None:
    note = pooling_note(["static", "continuous"])
    assert note is not None and note.startswith("pooled: one profile for static, continuous")
    assert "--engine NAME" in note


def test_a_profile_of_one_engine_says_nothing() -> None:
    assert pooling_note(["continuous"]) is None
