"""The simulator schedules reasoning tokens as ordinary decode and reports TTFO: the same steps and token times
as without them, the first r tokens on the reasoning channel, and TTFO - TTFT the time of those r decode steps."""

from __future__ import annotations

import pytest

from engines.api import Request
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen.replay import distinct_prompt
from harness.loadgen.scenarios import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop
from harness.metrics import records_frame
from harness.metrics.latency import request_latencies
from harness.metrics.reasoning import ttfo

REASONING, OUTPUT = 10, 24


def _run(reasoning: int):
    (spec,) = parse_engine_specs(["sim:max_running=8"], {})
    engine = build_engine(spec, None)
    steps: list = []
    engine.set_step_sink(steps.append)
    schedule = [
        Scheduled(Request(f"q{i}", distinct_prompt(i, 64), OUTPUT, True, reasoning_tokens=reasoning), i * 0.01)
        for i in range(6)
    ]
    records: list = []
    run_virtual_open_loop(engine, schedule, records.append, label="sim")
    return records_frame(records), steps


@pytest.fixture(scope="module")
def runs():
    return _run(REASONING), _run(0)


def test_reasoning_is_ordinary_decode(runs) -> None:
    (thinking, steps), (plain, plain_steps) = runs
    assert thinking["token_times"].tolist() == plain["token_times"].tolist()
    assert len(steps) == len(plain_steps)
    assert set(thinking["token_channels"]) == {"r" * REASONING + "c" * (OUTPUT - REASONING)}
    assert set(plain["token_channels"]) == {""}


def test_ttfo_minus_ttft_is_the_reasoning_decode_steps(runs) -> None:
    (frame, steps), _ = runs
    gap = ttfo(frame) - request_latencies(frame)["ttft"]
    for rid, first, observed in zip(frame["request_id"], frame["t_first_token"], gap, strict=True):
        # the r steps after its first token that computed this request: their durations are its reasoning's time
        mine = [s for s in steps if rid in s.running_ids and s.t_end > first + 1e-12][:REASONING]
        longest = max(s.t_end - s.t_start for s in mine)
        assert abs(observed - sum(s.t_end - s.t_start for s in mine)) <= longest, rid


def test_a_recorded_schedule_replays_with_its_reasoning_tokens(tmp_path) -> None:
    from harness.simulation import schedule_from_run

    rows = [
        '{"request_id": "a", "arrival_s": 0.0, "input_tokens": 4, "output_tokens": 8, "reasoning_tokens": 5}',
        '{"request_id": "b", "arrival_s": 0.1, "input_tokens": 4, "output_tokens": 8}',
    ]
    (tmp_path / "requests.jsonl").write_text("\n".join(rows) + "\n")
    assert [s.request.reasoning_tokens for s in schedule_from_run(tmp_path)] == [5, 0]
