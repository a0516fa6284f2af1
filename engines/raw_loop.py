"""The ceiling: a hand-written batched prefill + decode loop with no scheduler at all.

Fixed batches, every sequence forced to the same output length, a contiguous KV cache per batch and
plain SDPA: nothing waits, nothing is padded, nothing is scheduled. Its layers are the engines' own
(`engines.fused_layers`), so the comparison measures batching and bookkeeping, not layer code. An
engine can only approach this; `batchmark bench engines` reports each engine as a share of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from engines.fused_layers import apply_rope, fused_model, greedy, rms_norm


@dataclass
class RawResult:
    """What the raw loop produced: output tokens, seconds and forward steps."""

    output_tokens: int
    seconds: float
    steps: int
    tokens: list[list[int]] = field(default_factory=list)  # each prompt's greedy tokens, in prompt order

    @property
    def tok_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


class RawLoop:
    """Fixed batches through the model with a contiguous KV cache and no scheduler: the ceiling."""

    def __init__(self, model: Any) -> None:
        config = model.config
        self.model = model
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.fused = fused_model(model)  # the engines' own layer math, so only the batching differs

    def _forward(self, ids: torch.Tensor, start: int, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """ids [B, S] at positions start..start+S-1; caches [layers, B, Hkv, L, D]; returns last logits."""
        fused, heads, kv_heads, dim = self.fused, self.heads, self.kv_heads, self.head_dim
        batch, length = ids.shape
        end = start + length
        hidden = F.embedding(ids.reshape(-1), fused.embed)  # [B * S, hidden]
        cos, sin = fused.rope.lookup(torch.arange(start, end).repeat(batch), end - 1)

        def heads_first(x: torch.Tensor) -> torch.Tensor:  # [B * S, h, D] -> [B, h, S, D]
            return x.reshape(batch, length, x.shape[1], dim).transpose(1, 2)

        for index, layer in enumerate(fused.layers):
            qkv = layer.qkv(rms_norm(hidden, layer.input_norm)).view(batch * length, heads + 2 * kv_heads, dim)
            qk, v = qkv[:, : heads + kv_heads], qkv[:, heads + kv_heads :]
            if layer.q_norm is not None and layer.k_norm is not None:
                qk = torch.cat((rms_norm(qk[:, :heads], layer.q_norm), rms_norm(qk[:, heads:], layer.k_norm)), 1)
            qk = apply_rope(qk, cos, sin)
            k_cache[index, :, :, start:end] = heads_first(qk[:, heads:])
            v_cache[index, :, :, start:end] = heads_first(v)
            out = F.scaled_dot_product_attention(
                heads_first(qk[:, :heads]),
                k_cache[index, :, :, :end],
                v_cache[index, :, :, :end],
                is_causal=length > 1,
                enable_gqa=kv_heads != heads,
            )
            hidden += layer.o(out.transpose(1, 2).reshape(batch * length, heads * dim))
            hidden += layer.mlp(rms_norm(hidden, layer.post_norm))
        return fused.logits(hidden.view(batch, length, -1)[:, -1])

    @torch.inference_mode()
    def run(self, prompts: list[list[int]], output_len: int, batch_size: int = 32) -> RawResult:
        """Greedy-decode `output_len` tokens for every prompt. Prompts in a batch must share a length."""
        layers = len(self.model.model.layers)
        dtype = next(self.model.parameters()).dtype
        produced = steps = 0
        tokens: list[list[int]] = []
        t0 = time.perf_counter()
        for first in range(0, len(prompts), batch_size):
            group = prompts[first : first + batch_size]
            if len({len(p) for p in group}) != 1:
                raise ValueError("the raw loop needs equal prompt lengths within a batch")
            ids = torch.tensor(group, dtype=torch.int64)
            total = ids.shape[1] + output_len
            shape = (layers, len(group), self.kv_heads, total, self.head_dim)
            k_cache, v_cache = torch.empty(shape, dtype=dtype), torch.empty(shape, dtype=dtype)
            logits = self._forward(ids, 0, k_cache, v_cache)
            position = ids.shape[1]
            outputs: list[list[int]] = [[] for _ in group]
            tokens += outputs
            for index in range(output_len):
                chosen = greedy(logits)
                for out, token_id in zip(outputs, chosen, strict=True):
                    out.append(token_id)
                token = torch.tensor(chosen).unsqueeze(1)
                produced += len(group)
                steps += 1
                if index + 1 < output_len:  # the last token needs no further forward pass
                    logits = self._forward(token, position, k_cache, v_cache)
                    position += 1
        return RawResult(produced, time.perf_counter() - t0, steps, tokens)
