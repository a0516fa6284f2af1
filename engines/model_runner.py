"""Runs one engine step through the model: a flat batch of tokens from many sequences, a paged KV cache.

The transformer's own modules (projections, RMSNorm, RoPE, gated MLP) do the math; this file only
decides which rows go where. Tokens of all scheduled sequences are concatenated into one [T, hidden]
tensor, so linear layers see no padding; attention reads each sequence's keys through its block
table. That one layout serves prefill, chunked prefill, decode, recompute after preemption, and the
padded rows static batching computes for nothing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from engines.kernels import load_paged_attention
from engines.plan import StepPlan

# A chunk with more query rows than this runs through SDPA on its gathered context: for long prefills
# blocked matrix products beat the kernel's row-at-a-time loop, while decode rows stay on the kernel.
LONG_CHUNK = 16


class ModelRunner:
    def __init__(self, model: Any, num_blocks: int, block_size: int, pad_token_id: int = 0) -> None:
        config = model.config
        self.model = model
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = getattr(config, "num_key_value_heads", None) or self.num_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.num_heads
        self.max_context = config.max_position_embeddings
        self.pad_token_id = pad_token_id
        dtype = next(model.parameters()).dtype
        layers = model.model.layers
        # One extra block at the end is the scratch area: pad rows write their keys there, unread.
        slots = (num_blocks + 1) * block_size
        self.scratch_slot = num_blocks * block_size
        shape = (len(layers), slots, self.num_kv_heads, self.head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype)
        self.v_cache = torch.zeros(shape, dtype=dtype)
        self._layers = layers
        attn = layers[0].self_attn
        self.scale = float(getattr(attn, "scaling", 1.0 / math.sqrt(self.head_dim)))
        self._native = load_paged_attention() if dtype == torch.float32 else None

    @staticmethod
    def kv_bytes_per_token(model: Any) -> int:
        config = model.config
        heads = config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        element = next(model.parameters()).element_size()
        return 2 * config.num_hidden_layers * kv_heads * head_dim * element

    @property
    def attention_backend(self) -> str:
        return "native paged kernel" if self._native is not None else "torch gather + sdpa"

    def _prepare(self, plan: StepPlan) -> dict[str, Any]:
        """Flatten the plan into rows. Short chunks (decode) come first and go to the paged kernel;
        long chunks (prefill) follow and go to blocked SDPA, which wins once a chunk has many queries."""
        bs = self.block_size
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        token_seq: list[int] = []
        spans: list[tuple[int, int, bool]] = []  # rows of each chunk, and whether it starts at position 0
        last_row: dict[int, int] = {}
        short = [i for i, c in enumerate(plan.chunks) if c.num_tokens + c.num_pad <= LONG_CHUNK]
        long = [i for i, c in enumerate(plan.chunks) if c.num_tokens + c.num_pad > LONG_CHUNK]
        num_short_rows = 0
        for row in short + long:
            if row == (long[0] if long else None):
                num_short_rows = len(ids)
            chunk = plan.chunks[row]
            seq = chunk.seq
            table = seq.block_table
            start = seq.num_computed_tokens
            end = start + chunk.num_tokens
            ids.extend(seq.token_ids[start:end])
            positions.extend(range(start, end))
            slots.extend(table[p // bs] * bs + p % bs for p in range(start, end))
            last_row[row] = len(ids) - 1
            if chunk.num_pad:
                last = max(end, 1) - 1  # pad rows look at the sequence's real context, never beyond
                ids.extend([self.pad_token_id] * chunk.num_pad)
                positions.extend([last] * chunk.num_pad)
                slots.extend([self.scratch_slot] * chunk.num_pad)
            token_seq.extend([row] * (end - start + chunk.num_pad))
            spans.append((len(ids) - (end - start + chunk.num_pad), len(ids), start == 0))
        if not long:
            num_short_rows = len(ids)
        width = max(1, max(len(c.seq.block_table) for c in plan.chunks))
        block_tables = np.zeros((len(plan.chunks), width), dtype=np.int32)
        for row, chunk in enumerate(plan.chunks):
            block_tables[row, : len(chunk.seq.block_table)] = chunk.seq.block_table
        pos = torch.tensor(positions, dtype=torch.int64)
        sample_rows = [last_row[i] for i, c in enumerate(plan.chunks) if c.yields_token]
        # A finished member of a static batch still runs its whole row, LM head included, as a padded
        # batch does; its logits are computed and thrown away.
        sample_rows += [last_row[i] + c.num_pad for i, c in enumerate(plan.chunks) if not c.num_tokens and c.num_pad]
        return {
            "ids": torch.tensor(ids, dtype=torch.int64),
            "positions": pos,
            "slots": torch.tensor(slots, dtype=torch.int64),
            "token_seq": torch.tensor(token_seq, dtype=torch.int32),
            "token_pos": pos.to(torch.int32),
            "block_tables": torch.from_numpy(block_tables),
            "sample_rows": torch.tensor(sample_rows, dtype=torch.int64),
            "num_samples": sum(c.yields_token for c in plan.chunks),
            "max_len": int(pos.max().item()) + 1 if positions else 1,
            "num_short_rows": num_short_rows,
            # rows past the kernel's, grouped once per step rather than once per layer
            "span_groups": _span_groups(spans, num_short_rows if self._native is not None else 0),
        }

    @torch.inference_mode()
    def execute(self, plan: StepPlan) -> list[int]:
        """Compute the plan's tokens; return the greedy next token of each sampling chunk, in order."""
        if not plan.chunks:
            return []
        batch = self._prepare(plan)
        inner = self.model.model
        hidden = inner.embed_tokens(batch["ids"])
        cos, sin = inner.rotary_emb(hidden, batch["positions"].unsqueeze(0))
        cos, sin = cos[0], sin[0]
        num_tokens = hidden.shape[0]
        for index, layer in enumerate(self._layers):
            attn = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = attn.q_proj(x).view(num_tokens, self.num_heads, self.head_dim)
            k = attn.k_proj(x).view(num_tokens, self.num_kv_heads, self.head_dim)
            v = attn.v_proj(x).view(num_tokens, self.num_kv_heads, self.head_dim)
            if hasattr(attn, "q_norm"):  # Qwen3 normalises queries and keys per head before RoPE
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)
            self.k_cache[index].index_copy_(0, batch["slots"], k)
            self.v_cache[index].index_copy_(0, batch["slots"], v)
            out = self._attention(index, q.contiguous(), k, v, batch)
            hidden = hidden + attn.o_proj(out.view(num_tokens, self.num_heads * self.head_dim))
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        rows = batch["sample_rows"]
        if rows.numel() == 0:
            return []
        logits = self.model.lm_head(inner.norm(hidden.index_select(0, rows)))
        return logits.argmax(dim=-1).tolist()[: batch["num_samples"]]

    def _attention(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   batch: dict[str, Any]) -> torch.Tensor:  # fmt: skip
        k_pool = self.k_cache[layer].view(-1, self.num_kv_heads, self.head_dim)
        v_pool = self.v_cache[layer].view(-1, self.num_kv_heads, self.head_dim)
        out = torch.empty_like(q)
        short = batch["num_short_rows"] if self._native is not None else 0
        if short:
            tables = batch["block_tables"]
            failed = self._native.paged_attention(
                q.data_ptr(), k_pool.data_ptr(), v_pool.data_ptr(), tables.data_ptr(), tables.shape[1],
                batch["token_seq"].data_ptr(), batch["token_pos"].data_ptr(), out.data_ptr(),
                short, self.num_heads, self.num_kv_heads, self.head_dim, self.block_size,
                self.scale, batch["max_len"],
            )  # fmt: skip
            if failed:
                raise MemoryError("paged attention kernel could not allocate its score buffer")
        for start, end, count, fresh in batch["span_groups"]:
            if fresh:
                self._attention_fresh(q, k, v, out, start, end, count)
            else:
                self._attention_cached(q, k_pool, v_pool, out, batch, start, end)
        return out

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **mask: Any) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, scale=self.scale, enable_gqa=self.num_kv_heads != self.num_heads, **mask
        )

    def _attention_fresh(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                         start: int, end: int, count: int) -> None:  # fmt: skip
        """`count` prefills of equal length starting at position 0: their own keys are their whole
        context, so one causal SDPA over [count, heads, length, dim] does them all, with no gather."""
        length = (end - start) // count

        def split(x: torch.Tensor) -> torch.Tensor:
            return x[start:end].view(count, length, x.shape[1], self.head_dim).transpose(1, 2)

        result = self._sdpa(split(q), split(k), split(v), is_causal=True)
        out[start:end] = result.transpose(1, 2).reshape(end - start, self.num_heads, self.head_dim)

    def _attention_cached(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, out: torch.Tensor,
                          batch: dict[str, Any], start: int, end: int) -> None:  # fmt: skip
        """One chunk whose context is (partly) in the cache: gather it through the block table, mask by position."""
        bs = self.block_size
        positions = batch["token_pos"][start:end].to(torch.int64)
        row = int(batch["token_seq"][start])
        length = int(positions.max().item()) + 1
        ar = torch.arange(length)
        slots = batch["block_tables"][row].to(torch.int64)[ar // bs] * bs + ar % bs
        k = k_pool[slots].transpose(0, 1)  # [Hkv, L, D]
        v = v_pool[slots].transpose(0, 1)
        mask = ar.unsqueeze(0) <= positions.unsqueeze(1)  # [q, L]
        out[start:end] = self._sdpa(q[start:end].transpose(0, 1), k, v, attn_mask=mask).transpose(0, 1)


def _span_groups(spans: list[tuple[int, int, bool]], first: int) -> list[tuple[int, int, int, bool]]:
    """Rows from `first` on as (start, end, chunks, fresh): runs of fresh spans of one length merge."""
    groups: list[tuple[int, int, int, bool]] = []
    for start, end, fresh in spans:
        if start < first:
            continue
        if groups and fresh and groups[-1][3]:
            g_start, g_end, count, _ = groups[-1]
            if (g_end - g_start) // count == end - start and g_end == start:
                groups[-1] = (g_start, end, count + 1, True)
                continue
        groups.append((start, end, 1, fresh))
    return groups
