"""`batchmark study`: the plan is checked before any work, its hash is kept, and a held-out slice can
overturn the pick made on the tuning slice, which the study then says."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.study.plan import load_plan
from harness.study.runner import Unit, execute, plan_units
from harness.study.variants import resolve, simulated

HERE = Path(__file__).parent


def test_the_held_out_slice_overturns_the_tuning_pick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("overturned.toml", "calm-then-rush.toml"):
        shutil.copy(HERE / name, tmp_path / name)
    out = tmp_path / "study"
    # 3 trials: the judge decides a threshold on the interval over trials, and one trial has none
    assert main(["study", str(tmp_path / "overturned.toml"), "--sim", "--trials", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    study = json.loads((out / "study.json").read_text())
    verdict = study["verdict"]
    # a 64-token step budget gives lower TPOT while the load is calm, and breaks the TTFT limit in the rush
    assert verdict["pick"] == "budget-64" and verdict["outcome"] == "falsified"
    assert any("ttft.p99 <= 1" in b for b in verdict["broken_on_held_out"])
    assert "FALSIFIED on the held-out slice: budget-64" in printed
    sha = hashlib.sha256((tmp_path / "overturned.toml").read_bytes()).hexdigest()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["plan_sha256"] == sha == study["plan_sha256"]
    assert {a["spec"].split(":")[0] for a in manifest["arms"]} == {"sim"}
    assert len(study["units"]) == 12 and all(Path(u["run_dir"], "records.jsonl").exists() for u in study["units"])
    html = (out / "study.html").read_text()
    assert "Failure mode" in html and "FALSIFIED" in html and "Pareto front" in html
    # a real change that reaches the SLO's region (18.7 s p99 TTFT in the rush): nothing to flag
    assert verdict["flags"] == [] and "flag:" not in printed


GOOD = """decision = "d"
workload = "chat-small"
[baseline]
engine = "sim"
[[variants]]
name = "fair"
change = { policy = "fair" }
[[metrics]]
name = "ttft.p99"
threshold = "<= +10%"
[slices]
tuning = [0, 5]
held_out = [5, 10]
"""


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (('name = "ttft.p99"', 'name = "ttft.p98x"'), ":9: field metrics[0].name: unknown metric 'ttft.p98x'"),
        (("held_out = [5, 10]", "held_out = [4, 10]"), ":13: field slices.held_out: overlaps the tuning slice"),
        (('[baseline]\nengine = "sim"\n', ""), ":8: field metrics[0].threshold: a threshold needs a baseline"),
        (
            ('change = { policy = "fair" }', 'change = { policy = "fair", max_running = 8 }'),
            ":7: field variants[0].change: change exactly one assumption",
        ),
        (('change = { policy = "fair" }', 'change = { policy = "lifo" }'), "policy='lifo' expected one of"),
        (('change = { policy = "fair" }', 'change = { colour = "red" }'), "unknown assumption 'colour'"),
    ],
)
def test_a_bad_plan_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], expected: str
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(GOOD.replace(*edit))
    assert main(["study", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and expected in err, err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_units_are_plain_picklable_calls_mapped_in_one_place(tmp_path: Path) -> None:
    import pickle

    path = tmp_path / "plan.toml"
    path.write_text(GOOD)
    plan = load_plan(path)
    arms = resolve(simulated(plan.baseline), list(plan.variants))
    units = plan_units(plan, arms, tmp_path)
    assert [u.key for u in units] == [
        "baseline-tuning-t0",
        "fair-tuning-t0",
        "baseline-held_out-t0",
        "fair-held_out-t0",
    ]
    assert pickle.loads(pickle.dumps(units)) == units
    seen: list[str] = []

    def fake(unit: Unit) -> dict:
        seen.append(unit.key)
        return {"arm": unit.arm.name}

    # an executor is a `map`: the units go through it, in order, and their results come back in order
    results = execute(units, run_one=fake, map_fn=lambda f, xs: list(map(f, xs)))
    assert seen == [u.key for u in units] and [r["arm"] for r in results] == ["baseline", "fair"] * 2


def test_variants_build_on_each_other_through_the_option_table() -> None:
    path = HERE / "overturned.toml"
    plan = load_plan(path)
    arms = resolve("continuous:max_running=16", [*plan.variants])
    assert arms[1].spec == "continuous:max_running=16,max_batched_tokens=64,label=budget-64"
    assert simulated("continuous:step_delay_ms=5,policy=fair") == "sim:scheduler=continuous,policy=fair"


def test_sweep_reports_fairness_at_every_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep"
    argv = [
        "sweep",
        "--workload",
        "noisy-neighbour",
        "--duration",
        "10",
        "--rates",
        "4,17.5",
        "--no-progress",
        "--engine",
        "sim:label=fcfs",
        "--engine",
        "sim:policy=fair,label=fair",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert "Jain" in capsys.readouterr().out
    curve = json.loads((out / "sweep.json").read_text())["curve"]
    for engine in ("fcfs", "fair"):
        assert all(0 < p["jain"] <= 1 and p["worst_slowdown"] >= 1 and p["vtc_gap"] > 0 for p in curve[engine])
    # at twice capacity the fair order spreads the slowdown: its worst tenant fares better than fcfs's
    assert curve["fair"][-1]["worst_slowdown"] < curve["fcfs"][-1]["worst_slowdown"]
