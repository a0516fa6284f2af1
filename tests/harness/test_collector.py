"""harness.collector: full collections inside `survivors_frozen` free new garbage and skip what survived."""

from __future__ import annotations

import gc
import weakref

from harness.collector import full_collection, survivors_frozen


class Node:
    """An object in a reference cycle: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_survivors_are_frozen_inside_and_handed_back_on_leaving():
    assert gc.get_freeze_count() == 0
    with survivors_frozen():
        full_collection()
        assert gc.get_freeze_count() > 0
        with survivors_frozen():  # nested: the inner block leaves the outer's freeze alone
            full_collection()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_after_the_freeze_is_still_freed():
    with survivors_frozen():
        full_collection()
        node = weakref.ref(Node())
        assert node() is not None
        full_collection()
        assert node() is None


def test_a_cycle_through_a_frozen_object_is_freed_after_leaving():
    with survivors_frozen():
        kept = Node()
        node = weakref.ref(kept)
        full_collection()  # `kept` survives: frozen
        del kept
        full_collection()
        assert node() is not None  # frozen: not scanned
    gc.collect()
    assert node() is None


def frozen(obj: object) -> bool:
    """Whether `obj` is in the permanent generation (`gc.get_objects` lists every generation but that one)."""
    return not any(o is obj for o in gc.get_objects())


def test_a_freeze_of_the_callers_own_is_left_as_it_is():
    # Judged by which objects are frozen, not by gc.get_freeze_count(): a thread another test left running can
    # free frozen objects meanwhile, and the count drops with them (574,164 -> 574,162 in one full-suite run).
    before = Node()
    gc.freeze()
    try:
        with survivors_frozen():
            inside = Node()
            full_collection()
            assert frozen(before) and not frozen(inside)  # the caller's freeze kept, nothing new frozen
        assert frozen(before) and not frozen(inside)  # and not unfrozen on leaving
    finally:
        gc.unfreeze()
