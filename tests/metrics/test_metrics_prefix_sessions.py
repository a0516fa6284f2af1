"""Prefix-cache hit rates (measured from records, predicted from prompts) and the multi-turn tables."""

from __future__ import annotations

import pytest

from harness.metrics import summarize
from harness.metrics.frame import records_frame
from harness.metrics.prefix_cache import measured_hit_rate, predicted_hit_rate
from harness.metrics.sessions import session_e2e, ttft_by_turn
from tests.fixtures.records import make_record


def test_predicted_hit_rate_counts_leading_blocks_seen_before_but_never_the_last_token() -> None:
    a = list(range(40))  # blocks of 16: [0..15], [16..31], then 8 tokens
    b = list(range(32)) + [99] * 8  # shares both full blocks with a
    c = list(range(32))  # all of it seen, but its last token is computed: 1 block reusable
    d = [7] * 20  # nothing in common
    out = predicted_hit_rate([a, b, c, d], 16)
    assert out["reusable_tokens"] == 0 + 32 + 16 + 0
    assert out["hit_rate"] == pytest.approx(48 / 132)


def test_measured_hit_rate_is_none_without_reports_and_a_share_with_them() -> None:
    plain = records_frame([make_record("a"), make_record("b")])
    assert measured_hit_rate(plain) is None  # no engine said: no data, not 0%
    told = records_frame(
        [make_record("a", prompt_tokens=100, cached_tokens=64), make_record("b", prompt_tokens=60, cached_tokens=0)]
    )
    assert measured_hit_rate(told) == {"hit_rate": 0.4, "cached_tokens": 64, "prompt_tokens": 160, "requests": 2}


def test_ttft_by_turn_and_session_e2e() -> None:
    rows = [
        make_record("r0", t_scheduled=0.0, ttft=0.5, gaps=[0.1], session="a", turn=0, cached_tokens=0),
        make_record("r1", t_scheduled=2.0, ttft=0.2, gaps=[0.1], session="a", turn=1, cached_tokens=32),
        make_record("r2", t_scheduled=1.0, ttft=0.3, session="b", turn=0, cached_tokens=0),
    ]
    frame = records_frame(rows)
    turns = ttft_by_turn(frame)
    assert [(t["turn"], t["requests"], t["ttft_p50"]) for t in turns] == [
        (0, 2, pytest.approx(0.4)),
        (1, 1, pytest.approx(0.2)),
    ]
    assert turns[1]["cached_tokens_mean"] == 32
    e2e = session_e2e(frame)
    assert e2e["sessions"] == 2 and e2e["complete"] == 2
    assert e2e["e2e_p50_s"] == pytest.approx((2.3 + 0.3) / 2)  # a: 0 -> 2.3; b: 1.0 -> 1.3
    summary = summarize(frame)
    assert summary["sessions"]["e2e"]["sessions"] == 2 and summary["prefix_cache"]["cached_tokens"] == 32
    assert summarize(records_frame([make_record("x")]))["sessions"] is None
