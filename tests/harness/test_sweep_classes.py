"""Capacity per SLO class in a sweep: the same bracket rule, on each class's own attainment."""

from __future__ import annotations

from harness.sweep.point import Point
from harness.sweep.runner import capacity_lines
from harness.sweep.search import class_capacity
from tests.fixtures.sweep_points import sweep_point


def _point(rate: float, interactive: float, batch: float, stopped: str | None = None) -> Point:
    classes: dict[str, float | None] = {"interactive": interactive, "batch": batch}
    return sweep_point(
        "e", rate, "climb", meets=stopped is None, stopped=stopped, classes=classes, run_dir="-", why="-"
    )


def test_each_class_gets_its_own_bracket_and_a_stop_rule_breaks_every_class() -> None:
    points = [_point(1, 1.0, 1.0), _point(2, 0.95, 0.5), _point(4, 0.5, 1.0), _point(8, 1.0, 1.0, "over_saturated")]
    inter = class_capacity(points, "e", "interactive", 0.9)
    batch = class_capacity(points, "e", "batch", 0.9)
    assert (inter.rate, inter.bound, inter.high) == (2, "bracketed", 4)
    assert (batch.rate, batch.bound, batch.high) == (1, "bracketed", 2)  # the first miss ends it: no later credit
    data = {"capacity": {}, "capacity_by_class": {"e": {"interactive": inter.__dict__, "batch": batch.__dict__}}}
    assert capacity_lines(data) == ["capacity e class interactive: 2 req/s", "capacity e class batch: 1 req/s"]
    unclassed = _point(1, 1.0, 1.0)
    unclassed.classes = None
    assert class_capacity([unclassed], "e", "interactive", 0.9).rate is None
