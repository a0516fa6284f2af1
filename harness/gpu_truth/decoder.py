"""A Llama-shaped decoder in plain torch, built from a config's shape, for timing steps on an accelerator.

It does what a serving engine's model does in one step, at a kernel level a reviewer can read: fused QKV and
gate/up projections (as vLLM fuses them), rotary embeddings, flash attention through `scaled_dot_product_attention`,
the KV cache written and read, the LM head on each sequence's last token. Weights are seeded random bf16: a GEMM's
time does not depend on its values (zeros aside, which draw less power: KINDS.md of the device notes), and no
checkpoint has to be downloaded. It is not a model that says anything: only its step times are used.

`mixed` is a continuous-batching step: one prompt chunk continuing a cached prefix, and decodes, in the same
GEMMs (their rows concatenated, as vLLM and batchmark's own engine run them), each with its own attention.
Decode attention reads each sequence's cache once: the query heads that share a KV head are laid out as that
head's `group` query rows (no copy of the cache per query head), as grouped-query kernels do.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engines.sim.shape import ModelShape

Cache = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys and values, (batch, kv_heads, tokens, head_dim)
ROPE_THETA = 500_000.0  # Llama 3's; the angle's value does not change the step's time


@dataclass
class Layer:
    norm_attn: torch.Tensor
    qkv: torch.Tensor  # (heads + 2 kv_heads) * head_dim x hidden
    out: torch.Tensor  # hidden x heads * head_dim
    norm_mlp: torch.Tensor
    gate_up: torch.Tensor  # 2 intermediate x hidden
    down: torch.Tensor  # hidden x intermediate


class Decoder:
    """The shape's weights on `device`; `prefill` and `decode` are one step each (see the module docstring)."""

    def __init__(self, shape: ModelShape, device: torch.device, dtype: torch.dtype = torch.bfloat16) -> None:
        self.shape, self.device, self.dtype = shape, device, dtype
        gen = torch.Generator(device=device).manual_seed(0)
        s = shape
        qkv_rows = (s.heads + 2 * s.kv_heads) * s.head_dim

        def weight(*dims: int) -> torch.Tensor:
            return (torch.randn(*dims, generator=gen, device=device, dtype=dtype) * 0.02).contiguous()

        def ones(n: int) -> torch.Tensor:
            return torch.ones(n, device=device, dtype=dtype)

        self.embed = weight(s.vocab, s.hidden)
        self.lm_head = self.embed if s.tied_embeddings else weight(s.vocab, s.hidden)
        self.norm = ones(s.hidden)
        self.layers = [
            Layer(
                ones(s.hidden),
                weight(qkv_rows, s.hidden),
                weight(s.hidden, s.heads * s.head_dim),
                ones(s.hidden),
                weight(2 * s.intermediate, s.hidden),
                weight(s.hidden, s.intermediate),
            )
            for _ in range(s.layers)
        ]

    def kv_cache(self, batch: int, tokens: int) -> Cache:
        """Per layer, keys and values of `batch` sequences of `tokens` positions (random: a filled cache)."""
        dims = (batch, self.shape.kv_heads, tokens, self.shape.head_dim)

        def filled() -> torch.Tensor:
            return torch.randn(dims, device=self.device, dtype=self.dtype)

        return [(filled(), filled()) for _ in self.layers]

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        half = self.shape.head_dim // 2
        freqs = ROPE_THETA ** (-torch.arange(half, device=self.device, dtype=torch.float32) / half)
        angles = positions.to(torch.float32)[:, None] * freqs  # (tokens, half)
        cos, sin = angles.cos().to(x.dtype)[:, None], angles.sin().to(x.dtype)[:, None]
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    @staticmethod
    def _rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.float32)
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * weight

    def _mlp(self, x: torch.Tensor, layer: Layer) -> torch.Tensor:
        gate, up = (self._rms(x, layer.norm_mlp) @ layer.gate_up.T).chunk(2, dim=-1)
        return x + (F.silu(gate) * up) @ layer.down.T

    def _qkv(self, x: torch.Tensor, layer: Layer, positions: torch.Tensor) -> tuple[torch.Tensor, ...]:
        s = self.shape
        qkv = self._rms(x, layer.norm_attn) @ layer.qkv.T
        q, k, v = qkv.split((s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim), dim=-1)
        q = self._rope(q.view(-1, s.heads, s.head_dim), positions)
        k = self._rope(k.view(-1, s.kv_heads, s.head_dim), positions)
        return q, k, v.view(-1, s.kv_heads, s.head_dim)

    def prefill(self, ids: torch.Tensor, cache: Cache) -> torch.Tensor:
        """`ids` (batch, n): prompts from scratch; writes positions 0..n-1 of `cache`; the last tokens' logits."""
        s = self.shape
        batch, n = ids.shape
        group = s.heads // s.kv_heads
        positions = torch.arange(n, device=self.device).repeat(batch)
        x = self.embed[ids.reshape(-1)]
        for layer, (k_cache, v_cache) in zip(self.layers, cache, strict=True):
            q, k, v = self._qkv(x, layer, positions)
            k = k.view(batch, n, s.kv_heads, s.head_dim).transpose(1, 2)
            v = v.view(batch, n, s.kv_heads, s.head_dim).transpose(1, 2)
            k_cache[:, :, :n].copy_(k)
            v_cache[:, :, :n].copy_(v)
            k = k.repeat_interleave(group, dim=1)  # causal flash attention wants one key head per query head
            v = v.repeat_interleave(group, dim=1)
            q = q.view(batch, n, s.heads, s.head_dim).transpose(1, 2)
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + attn.transpose(1, 2).reshape(batch * n, s.heads * s.head_dim) @ layer.out.T
            x = self._mlp(x, layer)
        last = x.view(batch, n, s.hidden)[:, -1]
        return self._rms(last, self.norm) @ self.lm_head.T

    def decode(self, ids: torch.Tensor, cache: Cache) -> torch.Tensor:
        """`ids` (batch,): one new token per sequence at the cache's last position, attending all of it."""
        s = self.shape
        batch, group = ids.shape[0], s.heads // s.kv_heads
        position = cache[0][0].shape[2] - 1
        positions = torch.full((batch,), position, device=self.device)
        x = self.embed[ids]
        for layer, (k_cache, v_cache) in zip(self.layers, cache, strict=True):
            q, k, v = self._qkv(x, layer, positions)
            k_cache[:, :, position].copy_(k)
            v_cache[:, :, position].copy_(v)
            q = q.view(batch, s.kv_heads, group, s.head_dim)  # a KV head's query heads as its query rows
            attn = F.scaled_dot_product_attention(q, k_cache, v_cache)
            x = x + attn.reshape(batch, s.heads * s.head_dim) @ layer.out.T
            x = self._mlp(x, layer)
        return self._rms(x, self.norm) @ self.lm_head.T

    def mixed(
        self, chunk_ids: torch.Tensor, chunk_cache: Cache, decode_ids: torch.Tensor, decode_cache: Cache
    ) -> torch.Tensor:
        """One chunk of `n` prompt tokens at the end of `chunk_cache` (batch 1; its first positions already
        cached) and `decode_ids` (batch,) one token each at `decode_cache`'s last position, in one step: the
        chunk's last token's logits, then each decode's."""
        s = self.shape
        n, group = chunk_ids.shape[0], s.heads // s.kv_heads
        batch = decode_ids.shape[0]
        total, position = chunk_cache[0][0].shape[2], decode_cache[0][0].shape[2] - 1
        start = total - n
        positions = torch.cat(
            (torch.arange(start, total, device=self.device), torch.full((batch,), position, device=self.device))
        )
        # imported here: torch.nn.attention.bias loads torch._dynamo, 4.5 s, which only a mixed step needs
        from torch.nn.attention.bias import causal_lower_right

        mask = causal_lower_right(n, total)  # chunk row i attends the cached prefix and rows 0..i
        x = self.embed[torch.cat((chunk_ids, decode_ids))]
        for layer, (ck, cv), (dk, dv) in zip(self.layers, chunk_cache, decode_cache, strict=True):
            q, k, v = self._qkv(x, layer, positions)
            ck[0, :, start:].copy_(k[:n].transpose(0, 1))
            cv[0, :, start:].copy_(v[:n].transpose(0, 1))
            dk[:, :, position].copy_(k[n:])
            dv[:, :, position].copy_(v[n:])
            chunk_q = q[:n].transpose(0, 1)[None]  # (1, heads, n, head_dim)
            chunk = F.scaled_dot_product_attention(
                chunk_q, ck.repeat_interleave(group, dim=1), cv.repeat_interleave(group, dim=1), attn_mask=mask
            )
            decode = F.scaled_dot_product_attention(q[n:].view(batch, s.kv_heads, group, s.head_dim), dk, dv)
            attn = torch.cat((chunk[0].transpose(0, 1).reshape(n, -1), decode.reshape(batch, -1)))
            x = x + attn @ layer.out.T
            x = self._mlp(x, layer)
        return self._rms(x[n - 1 :], self.norm) @ self.lm_head.T
