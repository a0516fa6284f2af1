"""A study's variants may change a simulated fleet's own keys (router, replicas, P:D pools): a 2 x 2 grid of
router policy x replica count runs each arm on each slice as a unit (harness/study/variants.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.cli import main
from harness.study.variants import change_problem

HERE = Path(__file__).parent


def test_a_router_by_replicas_grid_runs_each_arm_as_its_units(tmp_path: Path) -> None:
    for name in ("fleet.toml", "fleet-load.toml"):
        shutil.copy(HERE / name, tmp_path / name)
    assert main(["study", str(tmp_path / "fleet.toml"), "--no-report", "--out", str(tmp_path / "out")]) == 0
    study = json.loads((tmp_path / "out" / "study.json").read_text())
    units = {(u["arm"], u["slice"]) for u in study["units"]}
    assert units == {(a, s) for a in ("baseline", "least-2", "rr-3", "least-3") for s in ("tuning", "held_out")}
    for unit in study["units"]:
        records = [json.loads(line) for line in Path(unit["run_dir"], "records.jsonl").read_text().splitlines()]
        replicas, n = {r["replica"] for r in records}, 3 if unit["arm"].endswith("3") else 2
        assert replicas <= set(range(n)), unit["arm"]  # each arm ran its own fleet size
        if unit["arm"] in ("baseline", "rr-3"):  # round robin: every replica served (least_outstanding may not)
            assert replicas == set(range(n)), unit["arm"]


def test_a_fleet_change_must_be_one_of_its_keys() -> None:
    base = "cluster:replicas=2,replica=sim:model=llama-3.1-8b"
    assert change_problem(base, {"router": "power_of_two"}) is None
    assert "unknown assumption 'prefill' of a cluster engine" in str(change_problem(base, {"prefill": 2}))
    assert change_problem("disagg:prefill=1,decode=1,replica=sim", {"decode": 3}) is None
