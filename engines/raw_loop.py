"""The ceiling: a hand-written batched prefill + decode loop with no scheduler at all.

Fixed batches, every sequence forced to the same output length, a contiguous KV cache per batch and
plain SDPA: nothing waits, nothing is padded, nothing is scheduled. An engine can only approach this;
`batchmark bench engines` reports each engine as a share of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb


@dataclass
class RawResult:
    """What the raw loop produced: output tokens, seconds and forward steps."""

    output_tokens: int
    seconds: float
    steps: int

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

    def _forward(self, ids: torch.Tensor, start: int, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """ids [B, S] at positions start..start+S-1; caches [layers, B, Hkv, L, D]; returns last logits."""
        inner = self.model.model
        batch, length = ids.shape
        hidden = inner.embed_tokens(ids)
        positions = torch.arange(start, start + length).unsqueeze(0)
        cos, sin = inner.rotary_emb(hidden, positions)
        end = start + length
        for index, layer in enumerate(inner.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = attn.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
            if hasattr(attn, "q_norm"):
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            k_cache[index, :, :, start:end] = k
            v_cache[index, :, :, start:end] = v
            out = F.scaled_dot_product_attention(
                q,
                k_cache[index, :, :, :end],
                v_cache[index, :, :, :end],
                is_causal=length > 1,
                enable_gqa=self.kv_heads != self.heads,
            )
            out = out.transpose(1, 2).reshape(batch, length, self.heads * self.head_dim)
            hidden = hidden + attn.o_proj(out)
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        return self.model.lm_head(inner.norm(hidden[:, -1]))

    @torch.inference_mode()
    def run(self, prompts: list[list[int]], output_len: int, batch_size: int = 32) -> RawResult:
        """Greedy-decode `output_len` tokens for every prompt. Prompts in a batch must share a length."""
        layers = len(self.model.model.layers)
        dtype = next(self.model.parameters()).dtype
        produced = steps = 0
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
            for index in range(output_len):
                token = logits.argmax(-1, keepdim=True)
                produced += len(group)
                steps += 1
                if index + 1 < output_len:  # the last token needs no further forward pass
                    logits = self._forward(token, position, k_cache, v_cache)
                    position += 1
        return RawResult(produced, time.perf_counter() - t0, steps)
