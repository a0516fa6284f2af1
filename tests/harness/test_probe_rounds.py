"""The probe's step estimate survives a server that delivers tokens in bursts (several per read)."""

from __future__ import annotations

import pytest

from engines.api import FinishEvent
from harness.probe import ProbeConfig, Timeline, measure_round

STEP = 0.005


def timeline(sent: float, tokens: list[float]) -> Timeline:
    return Timeline(sent, tokens, FinishEvent("r", "length", 8, len(tokens), tokens[-1]))


@pytest.mark.parametrize("burst", [1, 2, 3])
def test_a_continuous_server_is_read_as_continuous_however_its_tokens_are_grouped(burst):
    # the engine steps every 5 ms; the HTTP side hands its tokens over `burst` at a time (vLLM's stream
    # chunks, or an HTTP process descheduled beside its engine process): the median gap is 0 for burst > 1
    steps = [i * STEP for i in range(1, 49)]
    delivered = [
        steps[(i // burst) * burst + burst - 1] if (i // burst) * burst + burst - 1 < 48 else steps[-1]
        for i in range(48)
    ]
    t_short = delivered[10]
    longs = [timeline(0.0, delivered), timeline(0.0, delivered)]
    shorts = [timeline(t_short, [t_short + 2 * STEP + 0.001 + i * STEP for i in range(4)]) for _ in range(3)]
    config = ProbeConfig(url="http://x", long_tokens=48, short_tokens=4)
    result = measure_round(longs, shorts, t_short, config)
    assert result.problem is None
    assert result.step_s == pytest.approx(STEP, rel=0.25)
    assert all(z < 0.5 for z in result.z_ttft)  # nearer the continuous prediction than the static one
