"""The demo sizes its load to the machine it runs on and ends on time, saying what it showed."""

from __future__ import annotations

import numpy as np
import pytest

from harness import demo
from harness.cli import main

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)


def test_the_plan_offers_a_share_of_the_measured_capacity() -> None:
    speed = demo.Speed(prefill_tok_s=4000.0, decode_tok_s=1000.0, seconds=5.0, threads=1, decode_by_threads={1: 1e3})
    uniform = np.arange(400) / 5.0  # a trace slice at 5 req/s
    plan = demo.plan(speed, mean_prompt=1000.0, mean_output=250.0, arrivals=uniform)
    # capacity = 1 / (1000 / 4000 + 250 / 1000) = 2 req/s; the demo offers LOAD_SHARE of it over ARRIVALS_S
    assert plan.capacity == pytest.approx(2.0)
    assert plan.requests == round(demo.LOAD_SHARE * 2.0 * demo.ARRIVALS_S)
    # the rate is kept: a whole number of requests at it spans ARRIVALS_S to within one inter-arrival time
    assert plan.rate == pytest.approx(plan.requests / plan.arrivals_s)
    assert plan.rate == pytest.approx(demo.LOAD_SHARE * 2.0, rel=0.05)
    assert abs(plan.arrivals_s - demo.ARRIVALS_S) <= 1.0 / plan.rate
    # the slice's first N arrivals end by the schedule's span: its last request is due on time
    last_due = uniform[plan.requests - 1] / plan.time_scale
    assert last_due == pytest.approx(plan.arrivals_s * (plan.requests - 1) / plan.requests)
    assert plan.max_run_s == pytest.approx(plan.arrivals_s + demo.DRAIN_S)
    # a slow machine keeps a rate it can carry: the schedule grows to MAX_ARRIVALS_S, then holds fewer requests
    slow = demo.plan(demo.Speed(400.0, 100.0, 5.0, 1, {}), 1000.0, 250.0, uniform)  # capacity 0.2 req/s
    assert slow.rate == pytest.approx(demo.LOAD_SHARE * 0.2, rel=0.15) and slow.arrivals_s == demo.MAX_ARRIVALS_S
    assert slow.max_run_s == pytest.approx(slow.arrivals_s + demo.DRAIN_S)
    text = "\n".join(plan.describe(speed))
    assert "serves about 2.00 req/s" in text and f"each engine stops at {plan.max_run_s:.0f} s" in text


def test_calibration_measures_this_machine() -> None:
    from engines import compute_threads
    from engines.model.loader import load_model

    compute_threads.configure()
    speed = demo.calibrate(load_model(None), [300, 200], threads=1)
    assert speed.threads == 1 and speed.decode_by_threads == {}  # the given count is kept, not searched
    assert speed.prefill_tok_s > 0 and speed.decode_tok_s > 0
    assert speed.seconds < 60  # bounded by BUDGET_S plus one pair of bursts, on any machine


def test_no_calibration_burst_repeats_a_prompt(monkeypatch) -> None:
    """The engine's prefix cache would serve a repeated prompt from cache: a prefill measured on repeats
    ran 5x faster than the trace's distinct prompts and sized a load that overran continuous batching."""
    from engines import compute_threads
    from engines.model.loader import load_model

    seen: list[list[list[int]]] = []
    real = demo._bursts

    def recording(loaded, bursts, **kwargs):  # type: ignore[no-untyped-def]
        seen.append([list(r.prompt_token_ids) for burst in bursts for r in burst])
        return real(loaded, bursts, **kwargs)

    monkeypatch.setattr(demo, "_bursts", recording)
    monkeypatch.setattr(demo, "BUDGET_S", 0.0)  # the three bursts the budget always allows are enough here
    compute_threads.configure()
    demo.calibrate(load_model(None), [200, 150], threads=1)
    measured = seen[-1]  # the measuring call: warm-up, then (prefill, decode) x REPEATS
    assert len(measured) > demo.DECODE_BATCH
    assert len({tuple(p) for p in measured}) == len(measured)


def test_the_demo_with_a_load_of_its_own_ends_on_time_and_says_what_it_showed(tmp_path, capsys) -> None:
    # 8 requests in half a second: each engine's part is its drain, not its schedule (real time, on the tiny model)
    code = main(
        [
            "demo",
            "--workload",
            "chat-small",
            "--requests",
            "8",
            "--rate",
            "16",
            "--stop-run-s",
            "20",
            "--threads",
            "1",
            "--at-scale",
            "none",
            "--out",
            str(tmp_path / "demo"),
        ]
    )
    assert code == 0  # the part at scale has its own test (tests/sim/test_demo_at_scale.py)
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    assert "demo: no calibration (--rate, --requests given): the load is yours" in out
    assert "[static t0] sent " in err and "[continuous t0] sent " in err  # live status lines when piped
    assert "what this showed:" in out and "  TTFT p99: " in out and "  goodput (SLO-meeting req/s): " in out
    assert "report.html#timeline" in out and "where to look in the report:" in out
    assert "SIMULATED at scale" not in out
