"""The recovery controls, tested before harm: under overload each guard keeps what it promises where the
same run without it does not (simulated engines, so the overload is real and the test takes seconds), on the
plain roofline and on the calibrated default alike (`overload_run`: tests/study/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engines.api import Request
from engines.sim.build import build_sim_engine
from harness.loadgen.scenarios import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop
from harness.metrics import SLO, load_records, load_steps, request_latencies, slo_table

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

SLO_2S = SLO(ttft_s=2.0, tpot_s=0.2)


def _engine(records: pd.DataFrame, label: str) -> pd.DataFrame:
    return records[records["engine"] == label]


def _light(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["tenant"].str.startswith("light")]


def _p99_ttft(records: pd.DataFrame) -> float:
    ttft = request_latencies(records)["ttft"].dropna().to_numpy()
    return float(np.percentile(ttft, 99))


def _attainment(records: pd.DataFrame) -> float:
    return float(slo_table(request_latencies(records), SLO_2S)["meets_slo"].mean())


def test_admission_keeps_admitted_requests_within_the_slo(overload_run: Path) -> None:
    records = load_records(overload_run / "records.jsonl")
    fcfs, guarded = _engine(records, "fcfs"), _engine(records, "fair-shed")
    assert _p99_ttft(fcfs) > 3 * SLO_2S.ttft_s  # unguarded, the queue grows without bound
    for arm in ("fair-shed", "fcfs-shed"):  # guarded, on either order, what is admitted makes the SLO
        assert _p99_ttft(_engine(records, arm)) <= SLO_2S.ttft_s, arm
    shed = guarded[guarded["error_type"] == "slo_shed"]
    assert 0 < len(shed) < len(guarded)
    assert shed["error_message"].str.contains("time to first token").all()
    steps = load_steps(overload_run / "steps" / "fair-shed-t0.jsonl")
    decisions = [d for ds in steps["decisions"] for d in ds if d["action"] == "shed"]
    assert len(decisions) == len(shed)
    assert all(d["stage"] == 1 for d in decisions)
    predicted = [d for d in decisions if d["why"] == "predicted_ttft"]
    assert len(predicted) > len(decisions) / 2 and all(d["predicted_ttft_s"] > d["slo_s"] for d in predicted)
    assert all(d["predicted_ttft_s"] is None for d in decisions if d["why"] == "no_drain_rate")


def test_fair_admission_keeps_the_quiet_tenants_share(overload_run: Path) -> None:
    records = load_records(overload_run / "records.jsonl")
    # the light tenants' SLO attainment: without a guard they queue behind the noisy tenant; shedding by a
    # prediction that knows the fair order sheds mostly the noisy tenant's excess
    assert _attainment(_light(_engine(records, "fcfs"))) < 0.5
    assert _attainment(_light(_engine(records, "fair-shed"))) >= 0.7
    # the same guard on fcfs sheds the quiet tenants as readily as the noisy one
    assert _attainment(_light(_engine(records, "fcfs-shed"))) < _attainment(_light(_engine(records, "fair-shed")))


def test_the_fallback_switches_policy_and_says_so(overload_run: Path) -> None:
    records = load_records(overload_run / "records.jsonl")
    steps = load_steps(overload_run / "steps" / "fcfs-fallback-t0.jsonl")
    fallbacks = [d for ds in steps["decisions"] for d in ds if d["action"] == "fallback"]
    assert len(fallbacks) == 1
    (switch,) = fallbacks
    assert switch["policy"] == "fair" and switch["was"] == "fcfs" and switch["value"] > switch["threshold"]
    assert switch["held_s"] >= 1.0
    assert _p99_ttft(_light(_engine(records, "fcfs-fallback"))) < _p99_ttft(_light(_engine(records, "fcfs"))) / 2


def _starvation_schedule() -> list[Scheduled]:
    """One long request among a stream of short ones that alone keeps the single slot busy."""
    items = [Scheduled(Request("long", range(64), 200, ignore_eos=True), 0.0005)]
    items += [Scheduled(Request(f"s{i}", range(16), 8, ignore_eos=True), i * 0.004) for i in range(1500)]
    return sorted(items, key=lambda s: s.at)


def _long_wait(options: dict) -> float:
    engine = build_sim_engine({"max_running": 1, "policy": "sjf", **options}, "sjf")
    records: dict = {}
    run_virtual_open_loop(engine, _starvation_schedule(), lambda r: records.__setitem__(r.request_id, r), label="sjf")
    long = records["long"]
    return long.t_admitted - long.t_scheduled


def test_aging_ends_starvation_under_sjf() -> None:
    starved = _long_wait({})
    aged = _long_wait({"aging_s": 0.5})
    assert starved > 4.0  # shortest-job-first serves the stream of short requests first
    assert aged < 1.0  # aged past 0.5 s, the long request goes next


def test_defer_holds_back_instead_of_refusing() -> None:
    """Deferred requests are served once nothing that can still make the SLO waits; none is refused."""
    engine = build_sim_engine({"max_running": 1, "admission": "defer", "admission_slo_ms": 20}, "defer")
    steps: list = []
    engine.set_step_sink(steps.append)
    items = [Scheduled(Request(f"r{i}", range(16), 8, ignore_eos=True), i * 0.03) for i in range(60)]
    records: dict = {}
    run_virtual_open_loop(engine, items, lambda r: records.__setitem__(r.request_id, r), label="defer")
    assert all(r.error_type is None and r.output_tokens == 8 for r in records.values())  # nothing refused
    deferred = {d["id"] for s in steps for d in s.decisions if d["action"] == "defer" and d["stage"] == 1}
    assert deferred and len(deferred) < len(records)
    kept = [r for rid, r in records.items() if rid not in deferred]
    held = [r for rid, r in records.items() if rid in deferred]
    # every deferred request was admitted after every request that was queued normally before it arrived
    for r in held:
        earlier = [k for k in kept if k.t_scheduled < r.t_scheduled]
        assert all(k.t_admitted <= r.t_admitted for k in earlier)
