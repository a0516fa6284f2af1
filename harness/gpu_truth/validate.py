"""`batchmark sim validate`: load the truth, choose the cost model, score every row, build the table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.sim.calibration import KERNEL, load_calibration
from engines.sim.roofline import RooflineParams
from harness.gpu_truth.predict import STACK_OF_SOURCE, UNFITTED_STACK, CostChoice
from harness.gpu_truth.rows import DEFAULT_DIR, load_truth
from harness.gpu_truth.table import Group, format_table, groups, require_regimes, score


@dataclass(frozen=True)
class Validation:
    cost: str
    truth: str
    groups: list[Group]
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"cost": self.cost, "truth": self.truth, "groups": [g.to_json() for g in self.groups]}


def cost_choice(cost: str) -> CostChoice:
    if cost == "roofline":
        return CostChoice(RooflineParams())
    calibration = load_calibration(cost)
    return CostChoice(calibration.params, calibration)


def validation_table(cost: str, truth: Path | None = None) -> Validation:
    directory = truth or DEFAULT_DIR
    choice = cost_choice(cost)  # a bad calibration is one line before any row is read
    rows = load_truth(directory)
    require_regimes(rows, directory)
    scored = score(rows, choice, directory)
    table = groups(scored)
    text = format_table(table, choice.label, any(s.seen for s in scored))
    if choice.calibration is not None and any(
        STACK_OF_SOURCE.get(r.source, KERNEL) not in (KERNEL, *choice.calibration.stacks) for r in rows
    ):
        text += f"\nstack: {UNFITTED_STACK}"
    return Validation(choice.label, directory.name, table, text)  # a name: the JSON is committed
