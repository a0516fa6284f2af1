"""`batchmark sim calibrate`: fit the roofline's terms on the training half of one accelerator's truth rows.

The split is fixed by the row id (TruthRow.held_out), not chosen here: whatever is fitted, the other half
and every other accelerator's rows stay unseen. Least squares on log(predicted / measured), so a 1 ms
all-reduce and a 10 s prefill weigh alike; bounds keep every term physical (an MFU in (0, 1], floors >= 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from engines.sim.calibration import STACK_KEYS, Calibration
from engines.sim.roofline import RooflineParams
from harness.errors import HarnessInputError
from harness.gpu_truth.predict import STACK_OF_SOURCE, predict_ms
from harness.gpu_truth.rows import DEFAULT_DIR, TruthRow, load_truth


@dataclass(frozen=True)
class Term:
    name: str
    start: float
    low: float
    high: float


# The stack-independent terms, then each stack's floors; starts are the plain roofline's where it has one.
SHARED = (
    Term("mfu_prefill", 0.45, 0.05, 1.0),
    Term("prefill_rows_half", 64.0, 0.0, 8192.0),
    Term("mfu_decode", 0.30, 0.02, 1.0),
    Term("mbu", 0.80, 0.2, 1.0),
    Term("overlap", 0.5, 0.0, 1.0),
    Term("allreduce_latency_us", 8.0, 0.0, 500.0),
    Term("allreduce_per_peer_us", 0.0, 0.0, 500.0),
)
SHARED = (*SHARED, Term("link_efficiency", 0.5, 0.01, 1.0))
FLOORS = (
    Term("overhead_ms", 1.0, 0.0, 100.0),
    Term("layer_floor_us", 10.0, 0.0, 2000.0),
    Term("allreduce_per_peer_us", 5.0, 0.0, 500.0),
    Term("link_efficiency", 0.5, 0.01, 1.0),
)
ATTENTION = Term("attention_mfu", 0.3, 0.02, 1.0)
ACTIVATION = Term("activation_bytes", 1e5, 0.0, 1e8)


@dataclass(frozen=True)
class Form:
    """Which terms a fit frees beyond SHARED and FLOORS, and whether it takes the mixed steps' training half."""

    shared: tuple[Term, ...]
    floors: tuple[Term, ...]
    mixed: bool


# Every form tried for the mixed steps, each evaluated once on the held-out half
# (docs/measurements/2026-12-07-simulator-gpu-calibration-history.md gives each one's errors).
# base: the terms before; base+mixed: the same with the mixed steps' training half; attention: attention kernels
# at their own efficiency (the chunk's attention over its cached prefix); attention+activation: and the bytes a
# stack's norms, rotary and activation kernels move per row.
FORMS = {
    "base": Form(SHARED, FLOORS, mixed=False),
    "base+mixed": Form(SHARED, FLOORS, mixed=True),
    "attention": Form((*SHARED, ATTENTION), FLOORS, mixed=True),
    "attention+activation": Form((*SHARED, ATTENTION), (*FLOORS, ACTIVATION), mixed=True),
}
DEFAULT_FORM = "base"


def training_rows(rows: list[TruthRow], hardware: list[str], mixed: bool = False) -> list[TruthRow]:
    """The training half on `hardware`; mixed steps (a chunk beside decodes) only when `mixed`: the first fits left
    them out, to check how the roofline composes such a step from a prefill's and a decode's terms."""
    return [r for r in rows if r.hardware in hardware and not r.held_out and (mixed or r.kind != "mixed")]


def fit_calibration(
    hardware: list[str], name: str, directory: Path = DEFAULT_DIR, form: str = DEFAULT_FORM
) -> Calibration:
    """Shared terms over every accelerator in `hardware`, floors per serving stack (STACK_OF_SOURCE)."""
    from scipy.optimize import least_squares

    if form not in FORMS:
        raise HarnessInputError(f"sim calibrate: --form {form!r} is not one of {', '.join(FORMS)}")
    chosen = FORMS[form]
    rows = load_truth(directory)
    for hw in hardware:
        if not training_rows(rows, [hw]):
            raise HarnessInputError(
                f"{directory}: no training rows on {hw!r} (rows on: {', '.join(sorted({r.hardware for r in rows}))})"
            )
    train = training_rows(rows, hardware, chosen.mixed)
    stacks = sorted({STACK_OF_SOURCE[r.source] for r in train if r.kind in ("step", "mixed")})
    shared_terms, floor_terms = chosen.shared, chosen.floors
    terms = [*shared_terms, *[t for _ in stacks for t in floor_terms]]
    unfitted = {k: getattr(RooflineParams(), k) for k in STACK_KEYS if k not in {t.name for t in floor_terms}}

    def unpack(x: list[float]) -> tuple[RooflineParams, dict[str, dict[str, float]]]:
        shared = RooflineParams(
            **{t.name: float(v) for t, v in zip(shared_terms, x, strict=False)}, overhead_ms=0.0, layer_floor_us=0.0
        )
        rest = x[len(shared_terms) :]
        floors = {
            s: {**{t.name: float(rest[i * len(floor_terms) + j]) for j, t in enumerate(floor_terms)}, **unfitted}
            for i, s in enumerate(stacks)
        }
        return shared, floors

    def residuals(x: list[float]) -> list[float]:
        shared, floors = unpack(x)
        out = []
        for row in train:
            stack = STACK_OF_SOURCE[row.source]
            params = replace(shared, **floors[stack]) if stack in floors else shared
            out.append(math.log(predict_ms(row, params, directory) / row.ms))
        return out

    result = least_squares(
        residuals,
        [t.start for t in terms],
        bounds=([t.low for t in terms], [t.high for t in terms]),
        method="trf",
        x_scale="jac",
        max_nfev=400,
    )
    shared, floors = unpack(list(result.x))
    fitted_on = {
        "hardware": hardware,
        "rows": len(train),
        "truth": str(directory.name),
        "split": "rows whose id's SHA-256 starts with an even byte (harness/gpu_truth/rows.py)",
        "rms_log_error": math.sqrt(2 * result.cost / len(train)),
    }
    if form != DEFAULT_FORM:  # the base form's files read as before it had a name
        fitted_on = {**fitted_on, "form": form, "mixed_steps": chosen.mixed}
    sources = ", ".join(sorted({r.source for r in train}))
    command = "batchmark sim calibrate" + ("" if form == DEFAULT_FORM else f" --form {form}")
    provenance = (
        f"least squares on log error over the {len(train)} training-half rows on {', '.join(hardware)} of "
        f"{directory.name} ({sources}; SOURCE.md there): {command}"
    )
    stack_terms = {s: {k: _sig(v) for k, v in f.items()} for s, f in floors.items()}
    return Calibration(name, _rounded(shared, shared_terms), stack_terms, fitted_on, provenance)


def _rounded(params: RooflineParams, terms: tuple[Term, ...]) -> RooflineParams:
    """Four significant figures: the file reads as a table, and a refit that moves nothing changes no digit."""
    names = [t.name for t in terms]
    return replace(params, **{n: _sig(getattr(params, n)) for n in names}, overhead_ms=0.0, layer_floor_us=0.0)


def _sig(value: float) -> float:
    """Four significant figures; a term the fit pinned at its bound of 0 reads 0, not 1e-31."""
    return float(f"{value:.4g}") if abs(value) > 1e-9 else 0.0
