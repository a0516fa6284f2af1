"""The roofline cost model: a step is as slow as its compute or its memory traffic, whichever is slower.

    compute  = FLOPs_prefill / (mfu_prefill x size x peak) + FLOPs_decode / (mfu_decode x peak)
    memory   = (weights + KV read + KV written) / (mbu x bandwidth)
    step     = max(compute, memory) + (1 - overlap) x min(compute, memory)
               + attention + activations
               + overhead + layers x layer_floor + all-reduce (when tp > 1)

where size = rows / (rows + prefill_rows_half) is the share of peak a GEMM of that many rows reaches
(1 when prefill_rows_half is 0). Two terms price what runs in kernels of its own, after the GEMMs rather than
under them: with `attention_mfu` > 0, the attention FLOPs leave `compute` and cost
attention = FLOPs_attention / (attention_mfu x bf16 peak); `activation_bytes` (per row per layer: the norms,
rotary, activation and residual kernels' reads and writes) costs activations = rows x layers x activation_bytes
/ (mbu x bandwidth). Both 0 by default: the plain roofline.

per device, with every matrix split `tp` ways (Megatron-style tensor parallelism). FLOPs: 2 per weight
per row through the layers (pad rows included: they are computed), 2 x hidden x vocab per row through
the LM head, and 4 x layers x heads x head_dim per attended (query, key) pair. Bytes: the weights once
per step, the cached keys and values each chunk reads, and the ones the step writes. All-reduce: two per
layer (after attention and after the MLP), ring algorithm, `allreduce_latency_us` each plus
2 (tp - 1) / tp x rows x hidden x 2 bytes over the device's link bandwidth, the latency growing by
`allreduce_per_peer_us` per peer, the bandwidth `link_efficiency` of the datasheet's.

KV capacity = memory x gpu_memory_utilization - weights - activation reserve, per device, times tp
(docs/simulator.md gives every term). Defaults: MFU 0.45 prefill and 0.30 decode (BLIS's), MBU 0.80,
1 ms per-step overhead; each is an engine option. The terms after them (per-peer all-reduce latency, achieved
link bandwidth, a per-layer stack floor, GEMM-size efficiency, partial overlap) default to the plain
roofline; a calibration on public GPU step times sets them (engines/sim/calibration.py, `batchmark sim validate`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from engines.errors import EngineInputError
from engines.options import OPTIONS
from engines.sim.hardware import Accelerator
from engines.sim.precision import kv_bytes, peak_tflops, weight_precision
from engines.sim.shape import ModelShape
from engines.step_features import StepFeatures

GB = 1e9


def _default(name: str) -> float:
    return OPTIONS[name].default


@dataclass(frozen=True)
class RooflineParams:
    """Efficiency factors and memory settings; defaults from the engine option table."""

    mfu_prefill: float = _default("mfu_prefill")
    mfu_decode: float = _default("mfu_decode")
    mbu: float = _default("mbu")
    overhead_ms: float = _default("overhead_ms")  # scheduling, input preparation, launches: per step
    allreduce_latency_us: float = _default("allreduce_latency_us")
    allreduce_per_peer_us: float = _default("allreduce_per_peer_us")
    link_efficiency: float = _default("link_efficiency")  # share of the datasheet link bandwidth achieved
    layer_floor_us: float = _default("layer_floor_us")  # launches and stack work per layer, per step
    attention_mfu: float = _default("attention_mfu")  # 0: attention FLOPs priced with the GEMMs' (plain roofline)
    activation_bytes: float = _default("activation_bytes")  # per row per layer, moved by the non-GEMM kernels
    prefill_rows_half: float = _default("prefill_rows_half")
    overlap: float = _default("overlap")
    gpu_memory_utilization: float = _default("gpu_memory_utilization")
    activation_gb: float | None = None  # activation reserve per device; None: estimated (see kv_capacity_bytes)
    precision: str = _default("precision")  # weights, and the peak their GEMMs run at (engines/sim/precision.py)
    kv_precision: str = _default("kv_precision")

    def validate(self) -> None:
        for name in ("mfu_prefill", "mfu_decode", "mbu", "gpu_memory_utilization", "link_efficiency"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise EngineInputError(f"sim: {name}={value} must be in (0, 1]")
        for name in (
            "overhead_ms",
            "allreduce_latency_us",
            "allreduce_per_peer_us",
            "layer_floor_us",
            "prefill_rows_half",
            "activation_bytes",
        ):
            if getattr(self, name) < 0:
                raise EngineInputError(f"sim: {name}={getattr(self, name)} must be >= 0")
        for name in ("overlap", "attention_mfu"):
            if not 0 <= getattr(self, name) <= 1:
                raise EngineInputError(f"sim: {name}={getattr(self, name)} must be in [0, 1]")


class RooflineCost:
    """Step time of `shape` on `tp` devices of `hw` (see the module docstring for the formula)."""

    kind = "roofline"

    def __init__(self, shape: ModelShape, hw: Accelerator, tp: int, params: RooflineParams) -> None:
        params.validate()
        if tp < 1 or shape.heads % tp:
            raise EngineInputError(f"sim: tp={tp} must divide {shape.name}'s {shape.heads} attention heads")
        self.shape, self.hw, self.tp, self.params = shape, hw, tp, params
        weights = weight_precision(params.precision)
        kv_heads = math.ceil(shape.kv_heads / tp)  # fewer KV heads than devices: each device keeps a copy
        self.kv_bytes_per_token_device = 2 * shape.layers * kv_heads * shape.head_dim * kv_bytes(params.kv_precision)
        self.kv_bytes_per_token = self.kv_bytes_per_token_device * tp
        self.weight_bytes_device = shape.params * weights.bytes / tp
        peak = peak_tflops(hw, weights.compute) * 1e12
        self._row_flops = 2.0 * shape.layers * shape.layer_params / tp
        self._head_flops = 2.0 * shape.lm_head_params / tp
        self._pair_flops = 4.0 * shape.layers * shape.heads * shape.head_dim / tp
        self._prefill_rate = params.mfu_prefill * peak
        self._decode_rate = params.mfu_decode * peak
        self._bandwidth = params.mbu * hw.memory_tb_s * 1e12
        self._overhead = params.overhead_ms / 1e3 + shape.layers * params.layer_floor_us / 1e6
        # attention in kernels of its own (attention_mfu > 0): it leaves the GEMMs' FLOPs (their rates no longer
        # apply to it) and is paid after them; the bf16 peak, since the KV cache is read in bf16 at any weight format
        self._attention_rate = params.attention_mfu * hw.bf16_tflops * 1e12
        self._activation_per_row = shape.layers * params.activation_bytes / self._bandwidth
        self._link = hw.link_gb_s * GB
        self._ar_fixed = 2 * shape.layers * self.allreduce_time(0)
        self._ar_per_row = 2 * shape.layers * (self.allreduce_time(shape.hidden * 2) - self.allreduce_time(0))

    def _prefill_size(self, rows: float) -> float:
        """The share of mfu_prefill a GEMM of `rows` rows reaches (small GEMMs cannot fill the device)."""
        half = self.params.prefill_rows_half
        return rows / (rows + half) if half and rows else 1.0

    def _combine(self, compute: float, memory: float) -> float:
        return max(compute, memory) + (1.0 - self.params.overlap) * min(compute, memory)

    def allreduce_time(self, nbytes: float) -> float:
        """One ring all-reduce of `nbytes` per device across the tp devices (0 when tp is 1)."""
        if self.tp == 1:
            return 0.0
        p = self.params
        latency = (p.allreduce_latency_us + p.allreduce_per_peer_us * (self.tp - 1)) / 1e6
        return latency + 2 * (self.tp - 1) / self.tp * nbytes / (self._link * p.link_efficiency)

    def layer_gemm_time(self, rows: int) -> float:
        """One layer's q/k/v/o and MLP matrices on `rows` prefill rows, per device, nothing else."""
        flops = self._row_flops / self.shape.layers * rows
        weights = self.weight_bytes_device * self.shape.layers * self.shape.layer_params / self.shape.params
        rate = self._prefill_rate * self._prefill_size(rows)
        return self._combine(flops / rate, weights / self.shape.layers / self._bandwidth)

    def _own_kernels(self, attended: float, rows: float) -> tuple[float, float]:
        """The attention FLOPs left with the GEMMs, and the time of the kernels priced apart (module docstring)."""
        if not self._attention_rate:
            return self._pair_flops * attended, self._activation_per_row * rows
        return 0.0, self._pair_flops * attended / self._attention_rate + self._activation_per_row * rows

    def step_time(self, f: StepFeatures) -> float:
        prefill, _, decode, pad, held, attended, kv_read, sampled = f[:8]
        prefill_rows = prefill + pad - held  # prompt padding runs inside its prefill's GEMMs
        rows = prefill + decode + pad
        pairs, apart = self._own_kernels(attended, rows)
        pair_head = pairs + self._head_flops * sampled  # split in proportion to rows
        prefill_share = prefill_rows / rows if rows else 0.0
        prefill_flops = self._row_flops * prefill_rows + prefill_share * pair_head
        decode_flops = self._row_flops * (rows - prefill_rows) + (1.0 - prefill_share) * pair_head
        prefill_rate = self._prefill_rate * self._prefill_size(rows)  # the GEMMs run every row of the step
        compute = prefill_flops / prefill_rate + decode_flops / self._decode_rate
        memory = (self.weight_bytes_device + self.kv_bytes_per_token_device * (kv_read + rows)) / self._bandwidth
        return (
            self._combine(compute, memory)
            + apart
            + self._overhead
            + (self._ar_fixed + self._ar_per_row * rows if rows else 0.0)
        )

    def decode_step_times(self, n: int, kv_read: np.ndarray) -> np.ndarray:
        """`step_time` of pure decode steps of `n` sequences, one step per total of cached context read in `kv_read`
        (int64; each sequence attends its context and its new row): `step_time`'s operations in its order on arrays,
        so each time is the same float (tests/sim/test_roofline.py). For decode runs (engines/sim/decode_run.py)."""
        prefill_rows, rows = 0, n
        pairs, apart = self._own_kernels(kv_read + n, rows)
        pair_head = pairs + self._head_flops * n
        prefill_share = prefill_rows / rows
        prefill_flops = self._row_flops * prefill_rows + prefill_share * pair_head
        decode_flops = self._row_flops * (rows - prefill_rows) + (1.0 - prefill_share) * pair_head
        compute = prefill_flops / self._prefill_rate + decode_flops / self._decode_rate
        memory = (self.weight_bytes_device + self.kv_bytes_per_token_device * (kv_read + rows)) / self._bandwidth
        combined = np.maximum(compute, memory) + (1.0 - self.params.overlap) * np.minimum(compute, memory)
        return combined + apart + self._overhead + (self._ar_fixed + self._ar_per_row * rows)

    def kv_capacity_bytes(self, max_batched_tokens: int, max_running: int) -> int:
        """KV bytes across all tp devices: memory x utilisation - weights - activation reserve, per device.

        The activation reserve, when not given, is the peak of one step at the token budget: the MLP's
        gate and up outputs plus four hidden-sized buffers per token (bf16), and fp32 logits for every
        sequence that samples; vLLM sizes its pool the same way, by profiling such a step."""
        shape, p = self.shape, self.params
        if p.activation_gb is not None:
            activation = p.activation_gb * GB
        else:
            per_token = (2 * shape.intermediate / self.tp + 4 * shape.hidden) * 2
            activation = max_batched_tokens * per_token + max_running * shape.vocab * 4
        usable = self.hw.memory_gb * GB * p.gpu_memory_utilization
        free = usable - self.weight_bytes_device - activation
        if free <= 0:
            need = (self.weight_bytes_device + activation) / GB
            raise EngineInputError(
                f"sim: {shape.name} does not fit on {self.tp} x {self.hw.name}: {need:.1f} GB of weights and "
                f"activations per device, {usable / GB:.1f} GB usable ({p.gpu_memory_utilization:.0%} of "
                f"{self.hw.memory_gb:g} GB); raise tp"
            )
        return int(free * self.tp)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "model": self.shape.to_json(),
            "hardware": self.hw.to_json(),
            "tp": self.tp,
            "params": asdict(self.params),
            "weight_gb_per_device": self.weight_bytes_device / GB,
            "kv_bytes_per_token": self.kv_bytes_per_token,
        }
