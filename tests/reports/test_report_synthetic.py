"""The simulated run directories the report tests use have the shapes the report must show (the real
schedulers' own): static batches drain, continuous batching refills; records and traces agree with each
other and with the metrics loaders."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.metrics import load_records, load_steps, validity_flags
from tests.fixtures.run_dirs import capacity_rps, write_synthetic_run


def test_records_are_valid(run_dir: Path) -> None:
    records = load_records(run_dir / "records.jsonl")
    assert set(records["engine"]) == {"static", "continuous"}
    assert len(records) == 1200
    names = {f.name for f in validity_flags(records[records["engine"] == "continuous"])}
    assert names == set()
    ok = records["error_type"].isna()
    times = records["token_times"]
    assert (records.loc[ok, "output_tokens"] == times[ok].map(len)).all()
    assert all(np.all(np.diff(v) > 0) for v in times)
    assert (records["t_admitted"] >= records["t_sent"] - 1e-9).all()
    assert (records["t_first_token"] > records["t_admitted"]).all()


def test_static_batches_drain_and_hold_slots(run_dir: Path) -> None:
    steps = load_steps(run_dir / "steps" / "static-t0.jsonl")
    assert (steps["idle_slots"] > 0).any()
    for _, batch in steps.groupby("batch_id"):
        running = batch["num_running"].to_numpy()
        assert np.all(np.diff(running) <= 0)  # a static batch only ever loses members
        assert (batch["num_running"] + batch["idle_slots"]).nunique() == 1  # finished members keep their slot


def test_continuous_keeps_slots_full_under_load(tmp_path: Path) -> None:
    run = write_synthetic_run(
        tmp_path / "busy",
        requests=600,
        slots=8,
        mean_output=20,
        rate=0.9 * capacity_rps(8, 20),
        engines=("continuous",),
        with_metrics=False,
    )
    steps = load_steps(run / "steps" / "continuous-t0.jsonl")
    queued = steps["waiting"] > 0
    assert queued.mean() > 0.2
    busy = steps["num_running"] == 8
    # work waiting: every slot busy, unless prefill chunks spent the step's token budget (the scheduler says so)
    assert (busy | (steps["blocked_reason"] == "token_budget"))[queued].all()
    assert busy[queued].mean() > 0.95
    assert (steps["idle_slots"] == 0).all()
    assert set(steps["phase"]) <= {"prefill", "decode", "mixed"}


def test_step_trace_matches_token_times(run_dir: Path) -> None:
    """Every token arrives at the end of a step that computed its request."""
    records = load_records(run_dir / "records.jsonl")
    steps = load_steps(run_dir / "steps" / "continuous-t0.jsonl")
    ends = {round(t, 9): ids for t, ids in zip(steps["t_end"], steps["running_ids"], strict=True)}
    cont = records[records["engine"] == "continuous"].head(50)
    for rid, times in zip(cont["request_id"], cont["token_times"], strict=True):
        for t in times:
            assert rid in ends[round(t, 9)]
