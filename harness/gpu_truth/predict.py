"""What a cost model predicts for each truth row, and which regime the row belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from engines.sim.calibration import KERNEL, Calibration
from engines.sim.hardware import accelerator
from engines.sim.roofline import RooflineCost, RooflineParams
from engines.step_features import StepFeatures
from harness.gpu_truth.rows import DEFAULT_DIR, TruthRow, model_shape

# The serving stack each source measured under (SOURCE.md): its per-step floors are the stack's, not the GPU's.
# batchmark-graph: CUDA-graph replays of harness/gpu_truth/decoder.py (probe.py): no Python between kernels, but
# a plain-torch layer's small kernels (norms, rotary, cache writes) around its GEMMs: a stack of its own
STACK_OF_SOURCE = {
    "splitwise": "splitwise",
    "distserve": "distserve",
    "vidur": KERNEL,
    "batchmark-graph": "batchmark-torch",
}
PREFILL_BOUNDS = ((512, "prefill short (<=512 tok)"), (4096, "prefill mid (513-4096 tok)"))
BATCH_BOUNDS = ((1, "decode batch 1"), (16, "decode batch 2-16"), (64, "decode batch 17-64"))
CONTEXT_BOUNDS = ((1024, "decode ctx <=1k"), (4096, "decode ctx 1k-4k"))


UNFITTED_STACK = (
    "rows of a stack the calibration was not fitted on (a source of other hardware) are priced with kernel-only floors"
)
MIXED = ("mixed: chunk <=512 tok + decodes", "mixed: chunk >512 tok + decodes")
# every regime label in reading order (the table lists them so, not alphabetically)
ORDER = (
    *(label for _, label in PREFILL_BOUNDS),
    "prefill long (>4096 tok)",
    *(label for _, label in BATCH_BOUNDS),
    "decode batch >64",
    *MIXED,
    *(label for _, label in CONTEXT_BOUNDS),
    "decode ctx >4k",
    "layer GEMMs <=32 rows",
    "layer GEMMs >32 rows",
    "all-reduce <=64 KiB",
    "all-reduce >64 KiB",
)


def _bucket(value: int, bounds: tuple[tuple[int, str], ...], above: str) -> str:
    return next((label for bound, label in bounds if value <= bound), above)


def regime(row: TruthRow) -> str:
    """The row's regime: prefill by tokens in the step, decode by batch, or the component it times."""
    if row.kind == "allreduce":
        return "all-reduce <=64 KiB" if row.nbytes <= 64 * 1024 else "all-reduce >64 KiB"
    if row.kind == "layer":
        return "layer GEMMs <=32 rows" if row.tokens <= 32 else "layer GEMMs >32 rows"
    if row.kind == "mixed":
        return MIXED[row.tokens > 512]
    if row.phase == "prefill":
        return _bucket(row.batch * row.tokens, PREFILL_BOUNDS, "prefill long (>4096 tok)")
    return _bucket(row.batch, BATCH_BOUNDS, "decode batch >64")


def context_regime(row: TruthRow) -> str | None:
    """Decode rows by cached context (the second axis decode cost depends on); None for the rest."""
    if row.kind != "step" or row.phase != "decode":
        return None
    return _bucket(row.context, CONTEXT_BOUNDS, "decode ctx >4k")


def features(row: TruthRow) -> StepFeatures:
    """The step's counts: `batch` prompts of `tokens` from scratch, or `batch` decodes at `context`; a mixed row's
    chunk of `tokens` after `context` cached ones beside `batch` decodes at `decode_context` (as
    engines.step_features counts a continuous-batching step)."""
    b, n, c = row.batch, row.tokens, row.context
    if row.kind == "mixed":
        d = row.decode_context
        return StepFeatures(
            prefill_tokens=n,
            prefill_chunks=1,
            decode_seqs=b,
            attended_context=n * c + n * (n + 1) // 2 + b * (d + 1),
            kv_read_tokens=c + b * d,
            sampled_rows=1 + b,
            decode_context=b * (d + 1),
            prefill_context_pairs=n * c,
            prefill_self_pairs=n * n if c else n * (n + 1) // 2,
        )
    if row.phase == "prefill":
        return StepFeatures(
            prefill_tokens=b * n,
            prefill_chunks=b,
            attended_context=b * n * (n + 1) // 2,
            sampled_rows=b,
            prefill_self_pairs=b * n * (n + 1) // 2,
        )
    return StepFeatures(
        decode_seqs=b, attended_context=b * (c + 1), kv_read_tokens=b * c, sampled_rows=b, decode_context=b * (c + 1)
    )


@dataclass(frozen=True)
class CostChoice:
    """The plain roofline (`calibration` None: its defaults, or `params`) or a calibration."""

    params: RooflineParams
    calibration: Calibration | None = None

    @property
    def label(self) -> str:
        return "roofline (default parameters)" if self.calibration is None else f"calibration {self.calibration.name}"

    def params_for(self, source: str) -> RooflineParams:
        """A calibration fitted without the source's stack prices its rows with kernel-only floors (UNFITTED_STACK)."""
        if self.calibration is None:
            return self.params
        stack = STACK_OF_SOURCE.get(source, KERNEL)
        return self.calibration.params_for(stack if stack in self.calibration.stacks else KERNEL)

    def saw(self, row: TruthRow) -> bool:
        return self.calibration is not None and self.calibration.saw(row.hardware, row.held_out, row.kind == "mixed")


def predict_ms(row: TruthRow, params: RooflineParams, directory: Path = DEFAULT_DIR) -> float:
    cost = _cost(row.model or "llama-2-70b", row.hardware, row.tp, params, directory)
    if row.kind == "allreduce":
        return cost.allreduce_time(row.nbytes) * 1e3
    if row.kind == "layer":
        return cost.layer_gemm_time(row.tokens) * 1e3
    return cost.step_time(features(row)) * 1e3


@cache
def _cost(model: str, hardware: str, tp: int, params: RooflineParams, directory: Path) -> RooflineCost:
    # all-reduce rows name no model: the cost model needs one to exist, and prices bytes the same for any
    return RooflineCost(model_shape(model, directory), accelerator(hardware), tp, params)
