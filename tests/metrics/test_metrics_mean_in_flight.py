"""harness.metrics.throughput.mean_in_flight: the concurrency a run held, by Little's law."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.metrics import send_rates
from harness.metrics.throughput import mean_in_flight


def records(spans: list[tuple[float, float]]) -> pd.DataFrame:
    """One request per (t_sent, t_finish); scheduled at its send."""
    sent = [s for s, _ in spans]
    return pd.DataFrame({"t_scheduled": sent, "t_sent": sent, "t_finish": [f for _, f in spans]})


def test_two_users_sending_back_to_back_hold_two():
    # each user: [0, 1] then [1, 2]
    assert mean_in_flight(records([(0, 1), (1, 2), (0, 1), (1, 2)])) == pytest.approx(2.0)


def test_a_wait_between_a_users_requests_holds_less():
    # each user waits 0.5 s before its second request: 4 s of requests over a 2.5 s span
    assert mean_in_flight(records([(0, 1), (1.5, 2.5), (0, 1), (1.5, 2.5)])) == pytest.approx(1.6)


def test_unfinished_requests_are_left_out_and_none_finished_is_none():
    assert mean_in_flight(records([(0, 1), (0, math.nan)])) == pytest.approx(1.0)
    assert mean_in_flight(records([(0, math.nan)])) is None
    assert mean_in_flight(records([(1, 1)])) is None  # a span of 0


def test_the_load_block_carries_it():
    assert send_rates(records([(0, 1), (1, 2)]))["mean_in_flight"] == pytest.approx(1.0)
