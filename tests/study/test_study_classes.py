"""Per-class panels in `batchmark study` (plan key `slo_classes`): attainment and goodput per class per arm
with intervals, in study.json, the console and study.html; a class the workload names that the plan does not
define stops the study before any unit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main

WORKLOAD = """requests = 160
[[tenants]]
name = "chat"
rate = 6.0
input = 256
output = 32
slo_class = "{cls}"

[[tenants]]
name = "batch"
rate = 6.0
input = 2048
output = 256
"""
PLAN = """decision = "Does the priority policy keep the interactive class within its TTFT target?"
workload = "two.toml"
trials = 2
slo_classes = ["interactive:ttft_ms=1000", "batch:ttft_ms=30000"]
pick = "ttft.p99"

[baseline]
engine = "sim:max_running=8,prefix_caching=false"

[[variants]]
name = "priority"
change = {{ policy = "priority" }}

[[metrics]]
name = "ttft.p99"

[slices]
tuning = [0, 6]
held_out = [6, 12]
"""


def _study(tmp_path: Path, cls: str) -> tuple[int, Path]:
    (tmp_path / "two.toml").write_text(WORKLOAD.format(cls=cls))
    (tmp_path / "plan.toml").write_text(PLAN.format())
    out = tmp_path / "out"
    return main(["study", str(tmp_path / "plan.toml"), "--out", str(out)]), out


def test_per_class_panels_per_arm_with_intervals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _study(tmp_path, "interactive")
    assert code == 0
    console = capsys.readouterr().out
    panels = json.loads((out / "study.json").read_text())["verdict"]["classes"]
    assert set(panels) == {"tuning", "held_out"} and set(panels["tuning"]) == {"interactive", "batch"}
    for slice_name, by_class in panels.items():
        for cls, arms in by_class.items():
            assert set(arms) == {"baseline", "priority"}
            for arm, row in arms.items():
                assert len(row["requests"]) == 2 and all(n > 0 for n in row["requests"]), (slice_name, cls, arm)
                cell = row["attainment"]
                low, high = cell["ci"]
                assert cell["interval"] == "over trials" and low <= cell["mean"] <= high <= 1.0
    # the class comes from the spec tenant's field (chat -> interactive) and the tenant name (batch)
    tuning = panels["tuning"]["interactive"]
    assert tuning["priority"]["attainment"]["mean"] >= tuning["baseline"]["attainment"]["mean"]
    assert "per SLO class" in console and "interactive" in console and "attainment" in console
    html = (out / "study.html").read_text()
    assert 'id="classes"' in html and "goodput (steady)" in html and "over trials" in html


def test_a_class_the_plan_does_not_define_stops_the_study_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _study(tmp_path, "gold")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "two.toml:7: tenants[0].slo_class: unknown SLO class 'gold'" in err
    assert not (out / "units").exists()
