"""Reasoning-token metrics (harness/metrics/reasoning.py): each function on hand-checkable records, the summary
block, the console lines, and old records (no `token_channels`) reading as all content."""

from __future__ import annotations

import math

import pytest

from harness.console import _reasoning_lines
from harness.metrics import summarize
from harness.metrics.frame import records_frame
from harness.metrics.reasoning import (
    content_tokens,
    reasoning_exhausted,
    reasoning_summary,
    reasoning_tokens,
    tpot_content,
    tpot_reasoning,
    ttfo,
)
from tests.fixtures.records import make_record

# "a": 3 reasoning tokens 10 ms apart, then 2 content tokens 20 ms apart; first token 100 ms after arrival
A = make_record("a", t_scheduled=1.0, ttft=0.1, gaps=[0.01, 0.01, 0.05, 0.02], token_channels="rrrcc")
PLAIN = make_record("p", ttft=0.2, gaps=[0.03, 0.03])  # no token_channels key: a run before reasoning was recorded
SPENT = make_record("s", ttft=0.1, gaps=[0.01], token_channels="rr")  # max_tokens 2, both reasoning


@pytest.fixture(scope="module")
def frame():
    return records_frame([A, PLAIN, SPENT])


def test_token_counts_per_channel(frame) -> None:
    assert reasoning_tokens(frame).tolist() == [3, 0, 2]
    assert content_tokens(frame).tolist() == [2, 3, 0]


def test_ttfo_is_the_first_content_token_and_equals_ttft_without_reasoning(frame) -> None:
    out = ttfo(frame)
    assert out.iloc[0] == pytest.approx(0.1 + 0.01 + 0.01 + 0.05)  # the 4th token's time - scheduled
    assert out.iloc[1] == pytest.approx(0.2)  # all content: TTFO is TTFT
    assert math.isnan(out.iloc[2])  # no content at all: no TTFO


def test_tpot_per_channel(frame) -> None:
    assert tpot_reasoning(frame).iloc[0] == pytest.approx(0.01)  # (t2 - t0) / 2
    assert tpot_content(frame).iloc[0] == pytest.approx(0.02)  # one gap between the two content tokens
    assert math.isnan(tpot_reasoning(frame).iloc[1])  # no reasoning
    assert tpot_content(frame).iloc[1] == pytest.approx(0.03)
    assert math.isnan(tpot_content(frame).iloc[2])


def test_a_request_that_spent_max_tokens_reasoning_is_flagged_and_only_that_one(frame) -> None:
    assert reasoning_exhausted(frame).tolist() == [False, False, True]
    stopped = records_frame([make_record("x", gaps=[0.01], token_channels="rr", finish_reason="stop")])
    assert not reasoning_exhausted(stopped).any()  # it chose to stop: not cut off by max_tokens


def test_summary_block_and_console_lines(frame) -> None:
    block = reasoning_summary(frame, n_boot=50)
    assert block is not None
    assert (block["requests_with_reasoning"], block["reasoning_tokens"], block["content_tokens"]) == (2, 5, 5)
    assert (block["exhausted"], block["exhausted_ids"]) == (1, ["s"])
    assert block["ttfo"]["count"] == 2  # the spent request has no TTFO
    assert reasoning_summary(records_frame([PLAIN])) is None  # no reasoning seen: no block, not zeros
    summary = summarize(records_frame([A, SPENT]), n_boot=50)
    assert summary["reasoning"]["exhausted"] == 1
    lines = _reasoning_lines({"engines": {"e": summary}})
    assert lines[0].startswith("e: reasoning 5 of 7 output tokens in 2 requests; TTFO p50 ")
    assert lines[1].startswith("! e: 1 requests spent all of max_tokens reasoning")
