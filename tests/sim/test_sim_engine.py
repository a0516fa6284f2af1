"""The simulated engine runs the real schedulers in virtual time and writes a real run directory."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from engines.scheduler import ContinuousScheduler
from engines.static_scheduler import StaticScheduler
from harness.cli import main
from harness.engine_specs import build_engine, parse_engine_specs
from harness.metrics import load_records, load_steps

SIM_STATIC = "sim:scheduler=static,max_batch=8"
SIM_CONTINUOUS = "sim:max_running=8"


def run(out: Path, *argv: str) -> int:
    return main(["run", "--out", str(out), "--no-report", "--no-progress", *argv])


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "run"
    assert run(out, "--workload", "chat-mix", "--rate", "8", "--engine", SIM_STATIC, "--engine", SIM_CONTINUOUS) == 0
    return out


def test_the_engine_is_the_real_scheduler_on_a_cost_model() -> None:
    static, continuous = (build_engine(s, None) for s in parse_engine_specs([SIM_STATIC, SIM_CONTINUOUS], {}))
    assert type(static.scheduler) is StaticScheduler and type(continuous.scheduler) is ContinuousScheduler
    assert static.describe()["simulated"] is True
    assert continuous.describe()["cost_model"]["kind"] == "roofline"


def test_records_are_complete_and_on_the_virtual_clock(sim_run: Path) -> None:
    records = load_records(sim_run / "records.jsonl")
    assert set(records["engine"]) == {"sim-static", "sim-continuous"} and len(records) == 256
    assert (records["output_tokens"] == records["max_tokens"]).all()
    assert (records["token_times"].map(len) == records["output_tokens"]).all()
    assert (records["t_sent"] == records["t_scheduled"]).all()  # no dispatcher to lag in virtual time
    assert (records["t_admitted"] >= records["t_scheduled"]).all()
    assert (records["t_first_token"] > records["t_admitted"]).all()
    assert (records["t_finish"] == records["token_times"].map(lambda t: t[-1])).all()
    manifest = json.loads((sim_run / "manifest.json").read_text())
    assert all(e["simulated"] and e["simulated_with"]["cost_model"] == "roofline" for e in manifest["engines"])
    assert all(o["simulation_wall_s"] > 0 for o in manifest["outcomes"])


def test_the_traces_tell_static_from_continuous(sim_run: Path) -> None:
    static = load_steps(sim_run / "steps" / "sim-static-t0.jsonl")
    continuous = load_steps(sim_run / "steps" / "sim-continuous-t0.jsonl")
    assert (static["idle_slots"] > 0).any() and (continuous["idle_slots"] == 0).all()
    for _, batch in static.groupby("batch_id"):
        assert (batch["num_running"].diff().dropna() <= 0).all()  # a static batch only loses members
    rows = continuous.to_dict(orient="records")
    refills = [b for a, b in itertools.pairwise(rows) if a["finished"] and a["waiting"]]
    assert refills and all(b["admitted"] for b in refills)


def test_identical_seed_gives_identical_metrics(sim_run: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert run(again, "--workload", "chat-mix", "--rate", "8", "--engine", SIM_STATIC, "--engine", SIM_CONTINUOUS) == 0
    assert (again / "metrics.json").read_bytes() == (sim_run / "metrics.json").read_bytes()
    assert (again / "records.jsonl").read_bytes() == (sim_run / "records.jsonl").read_bytes()
    other = tmp_path / "other"
    assert run(other, "--workload", "chat-mix", "--rate", "8", "--seed", "1", "--engine", SIM_CONTINUOUS) == 0
    assert (other / "records.jsonl").read_bytes() != (sim_run / "records.jsonl").read_bytes()


def test_a_small_kv_pool_makes_the_scheduler_preempt(tmp_path: Path) -> None:
    out = tmp_path / "kv"
    assert run(out, "--workload", "kv-pressure", "--engine", "sim:max_running=32,kv_blocks=400") == 0
    steps = load_steps(out / "steps" / "sim-continuous-t0.jsonl")
    assert steps["preempted"].map(len).sum() > 0
    light = load_steps(out / "steps" / "sim-continuous-t0.jsonl", id_lists=False)  # what the metrics read
    assert light["preempted"].tolist() == [tuple(ids) for ids in steps["preempted"]]
    assert (steps["kv_blocks_used"] <= 400).all()
    records = load_records(out / "records.jsonl")
    assert records["preemptions"].sum() > 0 and (records["output_tokens"] == records["max_tokens"]).all()


def test_a_closed_loop_keeps_at_most_one_request_per_user(tmp_path: Path) -> None:
    out = tmp_path / "closed"
    assert run(out, "--workload", "closed-loop-small", "--engine", "sim") == 0
    records = load_records(out / "records.jsonl").sort_values("t_scheduled")
    events = sorted([(t, 1) for t in records["t_scheduled"]] + [(t, -1) for t in records["t_finish"]])
    assert max(itertools.accumulate(d for _, d in events)) <= 8
    finishes = sorted(records["t_finish"])
    # the first 8 go at once; every later send is 0.5 s of think time after some finish
    assert (records["t_scheduled"].iloc[:8] == 0).all()
    assert all(any(abs(t - f - 0.5) < 1e-9 for f in finishes) for t in records["t_scheduled"].iloc[8:])


def test_a_stop_rule_ends_a_hopeless_simulation(tmp_path: Path) -> None:
    out = tmp_path / "stop"
    code = run(
        out,
        "--workload",
        "chat-small",
        "--rate",
        "2000",
        "--engine",
        "sim:scheduler=static,max_batch=4",
        "--stop-in-flight",
        "20",
    )
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["outcomes"][0]["stopped_early"]["rule"] == "max_in_flight"
    records = load_records(out / "records.jsonl")
    assert len(records) < 64 and (records["finish_reason"] == "abort").any()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sim:hardware=b200", "unknown hardware 'b200' (known: h100, h200, a100, l40s, mi300x)"),
        ("sim:model=gpt-5", "unknown model 'gpt-5'"),
        ("sim:model=llama-3.1-70b", "does not fit on 1 x h100"),
        ("sim:scheduler=orca", "scheduler='orca' expected one of static, continuous"),
        ("sim:profile=/nonexistent.json", "cannot read profile"),
        ("sim:tp=two", "tp='two' is not an integer"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    assert run(tmp_path / "bad", "--workload", "chat-small", "--engine", spec) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
