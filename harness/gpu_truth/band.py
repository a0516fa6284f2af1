"""How far to trust a simulated result: its cost model's measured error, read from the validation tables.

The tables (engines/sim/calibrations/validation/NAME.json) are `batchmark sim validate --json` outputs,
committed and checked against a fresh validation by tests/sim/test_gpu_truth.py; nothing here is a
constant. A run's regime is its accelerator and the step phase: decode and prefill are reported apart.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from engines.errors import EngineInputError
from engines.sim.calibration import CALIBRATION_DIR, load_calibration
from engines.sim.roofline import RooflineParams

VALIDATION_DIR = CALIBRATION_DIR / "validation"
ROOFLINE = "roofline"  # the table of the plain roofline at its default parameters


def validation_name(engine: dict[str, Any]) -> str | None:
    """Which table measures this engine's cost model; None when its parameters match no validated set."""
    used = engine.get("simulated_with") or {}
    params = (engine.get("cost_model") or {}).get("params")
    if not isinstance(params, dict):
        return None
    name, validated = ROOFLINE, RooflineParams()
    if used.get("calibration"):
        try:
            calibration = load_calibration(str(used["calibration"]))
            name, validated = calibration.name, calibration.params_for(str(used.get("stack")))
        except EngineInputError:  # the file moved or changed since the run: nothing validated to point at
            return None
    same = all(params.get(k) == v for k, v in asdict(validated).items())
    return name if same else None  # a key set on top of the validated values: its error is unmeasured


def trust_text(engine: dict[str, Any]) -> str | None:
    """One sentence for a roofline engine (None for other cost models: fidelity measures those)."""
    cm = engine.get("cost_model") or {}
    if cm.get("kind") != "roofline":
        return None
    used = engine.get("simulated_with") or {}
    name = validation_name(engine)
    if name is None:
        return (
            "its roofline parameters were set by hand: their error against public GPU step times is unmeasured "
            "(`batchmark sim validate --cost FILE` measures a calibration)"
        )
    path = VALIDATION_DIR / f"{name}.json"
    try:
        groups = {(g["section"], g["key"]): g for g in json.loads(path.read_text(encoding="utf-8"))["groups"]}
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return f"no validation table {path.name}: the error of {name} is unmeasured (batchmark sim validate --json)"
    hw = str((cm.get("hardware") or {}).get("name"))
    command = "batchmark sim validate" + ("" if name == ROOFLINE else f" --cost {name}")
    label = "the plain roofline" if name == ROOFLINE else f"calibration {name}"
    per_phase = [(p, groups.get(("accelerator / phase", f"{hw} {p}"))) for p in ("decode", "prefill")]
    mixed = groups.get(("accelerator / phase", f"{hw} mixed"))  # chunk-and-decode steps, where measured
    per_phase += [("mixed steps", mixed)] if mixed and mixed["held_n"] else []
    if any(g and g["held_n"] for _, g in per_phase):
        text = f"{label} measured against {hw} step times ({command}): " + "; ".join(_phase(p, g) for p, g in per_phase)
        return text + _other_stack(hw, used.get("stack")) if name != ROOFLINE else text
    overall = [(p, groups.get(("phase", p))) for p in ("decode", "prefill")]
    return (
        f"no public step times on {hw}: the error of {label} there is unmeasured; on the accelerators that "
        f"have them ({command}): " + "; ".join(_phase(p, g) for p, g in overall)
    )


def _other_stack(hardware: str, stack: object) -> str:
    """A clause when the rows on `hardware` were measured under other serving stacks than the engine's (the H200's
    are batchmark's plain-torch decoder; the engine's default stack is Splitwise's): their error is the stack's."""
    from harness.gpu_truth.predict import STACK_OF_SOURCE
    from harness.gpu_truth.rows import load_truth

    steps = [r for r in load_truth() if r.hardware == hardware and r.kind in ("step", "mixed")]
    measured = sorted({STACK_OF_SOURCE[r.source] for r in steps})
    if not measured or stack in measured:
        return ""
    return f" (those rows ran under the {', '.join(measured)} stack; this engine prices stack {stack}'s floors)"


def _phase(phase: str, group: dict[str, Any] | None) -> str:
    if not group or not group.get("held_n"):
        return f"{phase} n/a (no held-out rows)"
    lean = group.get("held_median_error")
    lean_text = "" if lean is None else f", leaning {lean:+.0%}"
    return (
        f"{phase} within +/-{group['held_median_abs']:.0%} median on {group['held_n']} held-out rows "
        f"({group['held_within']:.0%} of them within 10%{lean_text})"
    )
