"""Number formats for weights and the KV cache: bytes per element, and which tensor-core peak the math runs at.

fp8 and int8 weights run their GEMMs at the accelerator's fp8 / int8 peak (W8A8); int4 is weight-only
(W4A16, as AWQ and GPTQ kernels do): half a byte read per weight, the math dequantised to bf16. An
accelerator without the format's tensor cores (fp8 on an A100) is an error, not a silent bf16. The roofline's
MFU applies to whichever peak the format uses: no public step times at fp8 or int4 are in the validation, so
that transfer is unmeasured.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.errors import EngineInputError
from engines.sim.hardware import Accelerator


@dataclass(frozen=True)
class Precision:
    name: str
    bytes: float  # per weight
    compute: str  # the peak its GEMMs run at: "bf16", "fp8" or "int8"


WEIGHT_PRECISIONS = {
    p.name: p
    for p in (
        Precision("bf16", 2, "bf16"),
        Precision("fp8", 1, "fp8"),
        Precision("int8", 1, "int8"),
        Precision("int4", 0.5, "bf16"),
    )
}
KV_BYTES = {"bf16": 2, "fp8": 1, "int8": 1}  # a KV cache is stored, not multiplied at a peak


def peak_tflops(hw: Accelerator, compute: str) -> float:
    """Dense tensor-core peak of `hw` for `compute`; one line when the accelerator lacks it."""
    peak = {"bf16": hw.bf16_tflops, "fp8": hw.fp8_tflops, "int8": hw.int8_tops}[compute]
    if not peak:
        has = ", ".join(k for k, v in (("bf16", hw.bf16_tflops), ("fp8", hw.fp8_tflops), ("int8", hw.int8_tops)) if v)
        raise EngineInputError(f"sim: {hw.name} has no {compute} tensor cores (it has: {has}); pick another precision")
    return peak


def weight_precision(name: str) -> Precision:
    if name not in WEIGHT_PRECISIONS:
        raise EngineInputError(f"sim: unknown precision {name!r} (known: {', '.join(WEIGHT_PRECISIONS)})")
    return WEIGHT_PRECISIONS[name]


def kv_bytes(name: str) -> int:
    if name not in KV_BYTES:
        raise EngineInputError(f"sim: unknown kv_precision {name!r} (known: {', '.join(KV_BYTES)})")
    return KV_BYTES[name]
