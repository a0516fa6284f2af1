"""The decoder's weights laid out for a flat batch of tokens, shared by the model runner and the raw loop.

On CPU a step of a small model pays for every torch call and for the weights' layout, so each layer
makes few, well-shaped calls: q, k and v come from one matrix product, as do the MLP's gate and up
projections (vLLM's QKVParallelLinear and MergedColumnParallelLinear); weights are stored transposed,
[in, out], because MKL's `mm(x, w_t)` ran decode-sized products 1.5-2x faster than `linear(x, w)`
(same results, bit for bit); RMSNorm is torch's one-call rms_norm; RoPE turns queries and keys together,
from cos/sin tables built once. The arithmetic is the transformer's own (same weights, same formulas),
so greedy tokens match transformers' generate.

The layout costs one more copy of the linear weights, made once per model and shared by every runner
and raw loop on it; it is read when first asked for, so weights changed later are not seen.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

Norm = tuple[torch.Tensor, float]  # RMSNorm weight and epsilon


def norm_params(module: Any) -> Norm:
    """An RMSNorm module's weight and epsilon (transformers names it variance_epsilon)."""
    return module.weight, float(getattr(module, "variance_epsilon", getattr(module, "eps", 1e-6)))


def rms_norm(x: torch.Tensor, norm: Norm) -> torch.Tensor:
    weight, eps = norm
    return F.rms_norm(x, weight.shape, weight, eps)


@dataclass
class Linear:
    """y = x w^T + b, with w stored transposed and contiguous; x is [rows, in]."""

    weight_t: torch.Tensor
    bias: torch.Tensor | None

    @classmethod
    def stack(cls, *linears: Any) -> Linear:
        weight_t = torch.cat([linear.weight for linear in linears]).t().contiguous()
        if all(linear.bias is None for linear in linears):
            return cls(weight_t, None)
        biases = [lin.bias if lin.bias is not None else lin.weight.new_zeros(lin.out_features) for lin in linears]
        return cls(weight_t, torch.cat(biases))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.bias is None:
            return torch.mm(x, self.weight_t)
        return torch.addmm(self.bias, x, self.weight_t)


@dataclass
class FusedLayer:
    input_norm: Norm
    qkv: Linear  # q, k and v projections stacked: [hidden, (H + 2 Hkv) D]
    q_norm: Norm | None  # Qwen3 normalises queries and keys per head before RoPE
    k_norm: Norm | None
    o: Linear
    post_norm: Norm
    gate_up: Linear  # gate and up projections stacked: [hidden, 2 I]
    down: Linear
    act: Callable[[torch.Tensor], torch.Tensor]

    @classmethod
    def from_module(cls, layer: Any) -> FusedLayer:
        attn, mlp = layer.self_attn, layer.mlp
        return cls(
            input_norm=norm_params(layer.input_layernorm),
            qkv=Linear.stack(attn.q_proj, attn.k_proj, attn.v_proj),
            q_norm=norm_params(attn.q_norm) if hasattr(attn, "q_norm") else None,
            k_norm=norm_params(attn.k_norm) if hasattr(attn, "k_norm") else None,
            o=Linear.stack(attn.o_proj),
            post_norm=norm_params(layer.post_attention_layernorm),
            gate_up=Linear.stack(mlp.gate_proj, mlp.up_proj),
            down=Linear.stack(mlp.down_proj),
            act=mlp.act_fn,
        )

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(self.act(gate) * up)


class RopeTables:
    """cos and sin per position, so a step looks its rows up instead of recomputing them.

    `sin` is stored with its first half negated: rotate_half(x) * sin == roll(x, D/2) * signed_sin, the
    same products (negation is exact), in two calls instead of five. RoPE variants whose frequencies
    change with the sequence length (dynamic NTK, LongRoPE) are computed per step instead.
    """

    def __init__(self, rotary_emb: Any, dtype: torch.dtype, max_positions: int) -> None:
        self.rotary_emb = rotary_emb
        self.dtype = dtype
        self.max_positions = max_positions
        rope_type = str(getattr(rotary_emb, "rope_type", "default"))
        self.static = "dynamic" not in rope_type and rope_type != "longrope"
        self._tables = (torch.empty(0), torch.empty(0))  # replaced whole, never mutated: runners share it

    def _compute(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probe = torch.empty(0, dtype=self.dtype)
        cos, sin = self.rotary_emb(probe, positions.unsqueeze(0))
        half = sin.shape[-1] // 2
        return cos[0], torch.cat((-sin[0, :, :half], sin[0, :, half:]), dim=-1)

    def lookup(self, positions: torch.Tensor, max_position: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin for each row, shaped [T, 1, D] to broadcast over heads."""
        if not self.static:
            cos, sin = self._compute(positions)
        else:
            table_cos, table_sin = self._tables
            if max_position >= table_cos.shape[0]:  # grow by doubling, up to the model's context
                limit = max(self.max_positions, max_position + 1)
                size = min(max(2 * table_cos.shape[0], max_position + 1, 1024), limit)
                table_cos, table_sin = self._tables = self._compute(torch.arange(size))
            cos, sin = table_cos.index_select(0, positions), table_sin.index_select(0, positions)
        return cos.unsqueeze(1), sin.unsqueeze(1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """x [T, heads, D] turned by its rows' angles: x cos + rotate_half(x) sin, as transformers does."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin


class FusedModel:
    """A causal LM's decoder as fused layers plus its embedding, final norm, LM head and RoPE tables."""

    def __init__(self, model: Any) -> None:
        inner = model.model
        self.layers = [FusedLayer.from_module(layer) for layer in inner.layers]
        self.embed = inner.embed_tokens.weight
        self.final_norm = norm_params(inner.norm)
        self.lm_head = Linear.stack(model.lm_head)
        dtype = next(model.parameters()).dtype
        self.rope = RopeTables(inner.rotary_emb, dtype, int(model.config.max_position_embeddings))

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(rms_norm(hidden, self.final_norm))


_FUSED: weakref.WeakKeyDictionary[Any, FusedModel] = weakref.WeakKeyDictionary()


def fused_model(model: Any) -> FusedModel:
    """The fused layout of `model`, built on first use and shared while the model lives."""
    fused = _FUSED.get(model)
    if fused is None:
        with torch.inference_mode():
            fused = _FUSED[model] = FusedModel(model)
    return fused


def greedy(logits: torch.Tensor) -> list[int]:
    """Each row's argmax, first index on ties as torch's: numpy's is ~20x faster on [32, 8192] fp32."""
    return logits.float().numpy().argmax(axis=-1).tolist()
