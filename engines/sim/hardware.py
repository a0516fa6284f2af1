"""Accelerators the roofline cost model knows: peak dense bf16 (fp8, int8) compute, memory bandwidth and capacity.

Figures are the vendors' datasheet numbers for dense (not sparse) bf16 tensor math, per device. The
link bandwidth is what one device can push to its peers for a tensor-parallel all-reduce (NVLink or
Infinity Fabric aggregate; PCIe for the L40S, which has no NVLink).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from engines.errors import EngineInputError


@dataclass(frozen=True)
class Accelerator:
    name: str
    bf16_tflops: float  # dense bf16 tensor-core peak, TFLOP/s
    memory_tb_s: float  # HBM / GDDR bandwidth, TB/s
    memory_gb: float  # capacity, GB (10^9 bytes, as datasheets count)
    link_gb_s: float  # per-device bandwidth to its peers for all-reduce, GB/s
    source: str
    fp8_tflops: float | None = None  # dense fp8 tensor-core peak; None: no fp8 tensor cores
    int8_tops: float | None = None  # dense int8 tensor-core peak, TOPS

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


HARDWARE: dict[str, Accelerator] = {
    a.name: a
    for a in (
        Accelerator(
            "h100",
            989.5,
            3.35,
            80.0,
            900.0,
            "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (BF16 1,979 TFLOPS with sparsity, "
            "989.5 dense; 3.35 TB/s HBM3; 80 GB; NVLink 900 GB/s): "
            "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet; "
            "FP8 and INT8 3,958 with sparsity, 1,979 dense",
            1979.0,
            1979.0,
        ),
        Accelerator(
            "h200",
            989.5,
            4.8,
            141.0,
            900.0,
            "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (BF16 1,979 TFLOPS with sparsity; "
            "4.8 TB/s HBM3e; 141 GB; NVLink 900 GB/s; FP8 and INT8 3,958 with sparsity, 1,979 dense): "
            "https://www.nvidia.com/en-us/data-center/h200/",
            1979.0,
            1979.0,
        ),
        Accelerator(
            "a100",
            312.0,
            2.039,
            80.0,
            600.0,
            "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (BF16 312 TFLOPS dense; "
            "2,039 GB/s HBM2e; 80 GB; NVLink 600 GB/s): "
            "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf; INT8 624 TOPS dense, no FP8",
            None,
            624.0,
        ),
        Accelerator(
            "l40s",
            362.05,
            0.864,
            48.0,
            64.0,
            "NVIDIA L40S datasheet (BF16 362.05 TFLOPS dense, 733 with sparsity; 864 GB/s GDDR6; 48 GB; "
            "no NVLink: PCIe Gen4 x16, 64 GB/s; FP8 733 TFLOPS and INT8 733 TOPS dense, 1,466 with sparsity): "
            "https://www.nvidia.com/en-us/data-center/l40s/",
            733.0,
            733.0,
        ),
        Accelerator(
            "mi300x",
            1307.4,
            5.3,
            192.0,
            896.0,
            "AMD Instinct MI300X data sheet (BF16 1,307.4 TFLOPS dense; 5.3 TB/s HBM3; 192 GB; "
            "Infinity Fabric 896 GB/s peer-to-peer aggregate; FP8 2,614.9 TFLOPS and INT8 2,614.9 TOPS "
            "dense): https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
            2614.9,
            2614.9,
        ),
    )
}
ALIASES = {"h100-sxm": "h100", "h100_sxm": "h100", "a100-80gb": "a100", "a100_80gb": "a100"}


def accelerator(name: str) -> Accelerator:
    """The table's entry for `name` (case-insensitive); an unknown name lists the known ones."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in HARDWARE:
        raise EngineInputError(f"sim: unknown hardware {name!r} (known: {', '.join(HARDWARE)})")
    return HARDWARE[key]
