"""Per-class panels in `batchmark study` (plan key `slo_classes`): attainment and goodput per class per arm
with intervals, in study.json, the console and study.html; a class the workload names that the plan does not
define stops the study before any unit."""

from __future__ import annotations

import contextlib
import io
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


@pytest.fixture(scope="module")
def plan_classes_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The study with the plan's classes, run once: its panels are checked here and are the figures the spec's
    classes must reproduce (its output directory and what it printed)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code, out = _study(tmp_path_factory.mktemp("plan-classes"), "interactive")
    assert code == 0
    return out, printed.getvalue()


def test_per_class_panels_per_arm_with_intervals(plan_classes_study: tuple[Path, str]) -> None:
    out, console = plan_classes_study
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
    # the classes rank the requests, so the priority variant changes their order: no "changes nothing" flag
    assert "changes no request's treatment" not in console


SPEC_CLASSES = """[[slo_classes]]
name = "interactive"
ttft_ms = 1000

[[slo_classes]]
name = "batch"
ttft_ms = 30000

"""


def test_classes_from_the_workload_spec_alone_rank_and_get_panels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plan_classes_study: tuple[Path, str]
) -> None:
    """A spec's [[slo_classes]] with a plan that defines none: every unit ranks its requests by them (the slice
    keeps the spec's classes) and the study shows their panels, the same figures as the plan giving them."""
    head, tenants = WORKLOAD.format(cls="interactive").split("\n", 1)  # top-level keys come before any table
    (tmp_path / "two.toml").write_text(f"{head}\n{SPEC_CLASSES}{tenants}")
    plan = PLAN.format().replace('slo_classes = ["interactive:ttft_ms=1000", "batch:ttft_ms=30000"]\n', "")
    assert "slo_classes" not in plan
    (tmp_path / "plan.toml").write_text(plan)
    out = tmp_path / "out"
    assert main(["study", str(tmp_path / "plan.toml"), "--out", str(out)]) == 0
    console = capsys.readouterr().out
    assert "changes no request's treatment" not in console
    spec_panels = json.loads((out / "study.json").read_text())["verdict"]["classes"]
    assert set(spec_panels["tuning"]) == {"interactive", "batch"}
    plan_out, _ = plan_classes_study
    plan_panels = json.loads((plan_out / "study.json").read_text())["verdict"]["classes"]
    assert spec_panels == plan_panels


def test_a_class_the_plan_does_not_define_stops_the_study_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _study(tmp_path, "gold")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "two.toml:7: tenants[0].slo_class: unknown SLO class 'gold'" in err
    assert not (out / "units").exists()
