"""A calibration of the roofline: its parameters fitted on public GPU step times, with their provenance.

A calibration file (engines/sim/calibrations/NAME.json, written by `batchmark sim calibrate`) holds the
roofline parameters that do not depend on the serving stack, and per stack the terms that do
(STACK_KEYS): the same GPU costs more per step under a Python
serving loop than under a C++ one. It also records which rows it was fitted on, so a validation can
tell the rows it saw from the ones it did not.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from engines.errors import EngineInputError
from engines.sim.files import read_json_object
from engines.sim.roofline import RooflineParams

CALIBRATION_DIR = Path(__file__).with_name("calibrations")
# what a serving stack adds around the kernels: per step, per layer, per all-reduce peer, the link
# bandwidth its all-reduces reach, and the bytes its non-GEMM kernels move per row (the kernel-only values are
# the shared parameters')
STACK_KEYS = ("overhead_ms", "layer_floor_us", "allreduce_per_peer_us", "link_efficiency", "activation_bytes")
KERNEL = "kernel"  # operators timed alone: no serving stack around them
DEFAULT_STACK = "splitwise"  # Splitwise's measured DGX step times (tests/fixtures/gpu_truth/SOURCE.md)
# What a roofline engine on these accelerators uses when it names no calibration: fitted on A100 and H200 rows,
# checked on H100 rows it never saw (docs/simulator.md). Elsewhere (L40S, MI300X: no truth rows) the plain roofline.
DEFAULT_CALIBRATION = "public-a100-h200-kernels"
CALIBRATED_HARDWARE = ("a100", "h100", "h200")
NONE = "none"  # calibration=none: the plain roofline at its defaults, on any accelerator


@dataclass(frozen=True)
class Calibration:
    name: str
    params: RooflineParams  # the stack floors here are the kernel-only ones (0)
    stacks: dict[str, dict[str, float]]  # stack -> {overhead_ms, layer_floor_us}
    fitted_on: dict[str, Any]  # {"hardware": [...], "split": "...", "rows": N, "truth": "..."}
    provenance: str

    def params_for(self, stack: str) -> RooflineParams:
        """The parameters under `stack`'s floors; an unknown stack is one line listing the known ones."""
        if stack == KERNEL:
            # timed alone: no step around it
            return replace(self.params, overhead_ms=0.0, layer_floor_us=0.0, activation_bytes=0.0)
        if stack not in self.stacks:
            raise EngineInputError(
                f"sim: calibration {self.name!r} has no stack {stack!r} (known: {', '.join([KERNEL, *self.stacks])})"
            )
        return replace(self.params, **self.stacks[stack])

    @property
    def default_stack(self) -> str:
        """The stack a simulation uses when none is named: the one with measured (not fitted) step times."""
        return DEFAULT_STACK if DEFAULT_STACK in self.stacks else next(iter(self.stacks), KERNEL)

    def saw(self, hardware: str, held_out: bool, mixed: bool = False) -> bool:
        """Whether a row on `hardware` with that split bit was among the rows this was fitted on (a mixed step
        only when the fit took the training half of those: `fitted_on.mixed_steps`)."""
        if mixed and not self.fitted_on.get("mixed_steps"):
            return False
        return hardware in self.fitted_on.get("hardware", ()) and not held_out

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "provenance": self.provenance,
            "fitted_on": self.fitted_on,
            "params": asdict(self.params),
            "stacks": self.stacks,
        }

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def known_calibrations() -> list[str]:
    return sorted(p.stem for p in CALIBRATION_DIR.glob("*.json"))


def load_calibration(name_or_path: str) -> Calibration:
    """A shipped calibration by name (`public-a100`) or a calibration JSON path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = CALIBRATION_DIR / f"{name_or_path}.json"
        if not path.is_file():
            raise EngineInputError(
                f"sim: unknown calibration {name_or_path!r} (known: "
                f"{', '.join(known_calibrations()) or 'none'}; or give a JSON path)"
            )
    data = read_json_object(path, "calibration")
    names = {f.name for f in fields(RooflineParams)}
    params, stacks = data.get("params"), data.get("stacks")
    if not isinstance(params, dict) or not isinstance(stacks, dict):
        raise EngineInputError(f"{path}: fields 'params' and 'stacks' must be objects")
    unknown = [k for k in params if k not in names]
    if unknown:
        raise EngineInputError(f"{path}: field params.{unknown[0]} is not a roofline parameter")
    for stack, floors in stacks.items():
        if not isinstance(floors, dict) or set(floors) != set(STACK_KEYS):
            raise EngineInputError(f"{path}: field stacks.{stack} must give exactly {', '.join(STACK_KEYS)}")
    calibration = Calibration(
        str(data.get("name", path.stem)),
        RooflineParams(**params),
        stacks,
        data.get("fitted_on") or {},
        str(data.get("provenance", "")),
    )
    for stack in (KERNEL, *stacks):
        calibration.params_for(stack).validate()
    return calibration
