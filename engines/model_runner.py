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
import torch.nn.functional as F

from engines.fused_layers import apply_rope, fused_model, greedy, rms_norm
from engines.kernels import load_paged_attention, zeros_on_huge_pages
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
        self.k_cache = zeros_on_huge_pages(shape, dtype)
        self.v_cache = zeros_on_huge_pages(shape, dtype)
        self._fused = fused_model(model)
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
        long chunks (prefill) follow and go to blocked SDPA, which wins once a chunk has many queries.

        One Python pass over the chunks reads what only the sequences know (their new tokens, where
        they start, their block tables); positions and slot mappings are then array arithmetic, never
        a loop over tokens (a 2,048-token prefill step used to take 2,048 turns of one)."""
        chunks = plan.chunks
        order = [i for i, c in enumerate(chunks) if c.num_tokens + c.num_pad <= LONG_CHUNK]
        num_short_chunks = len(order)
        order += [i for i, c in enumerate(chunks) if c.num_tokens + c.num_pad > LONG_CHUNK]
        ids: list[int] = []
        starts: list[int] = []
        last_row = [0] * len(chunks)
        spans: list[tuple[int, int, bool]] = []  # rows of each chunk, and whether it starts at position 0
        for i in order:
            chunk = chunks[i]
            seq = chunk.seq
            start = seq.num_computed_tokens
            first = len(ids)
            ids += seq.token_ids[start : start + chunk.num_tokens]
            last_row[i] = len(ids) - 1
            if chunk.num_pad:
                ids += [self.pad_token_id] * chunk.num_pad
            starts.append(start)
            spans.append((first, len(ids), start == 0))
        width = max(1, max(len(c.seq.block_table) for c in chunks))
        tables = np.zeros((len(chunks), width), dtype=np.int32)
        for row, chunk in enumerate(chunks):
            tables[row, : len(chunk.seq.block_table)] = chunk.seq.block_table
        real = np.array([chunks[i].num_tokens for i in order], dtype=np.int64)
        counts = np.array([end - first for first, end, _ in spans], dtype=np.int64)
        begin = np.array(starts, dtype=np.int64)
        offset = np.arange(len(ids)) - np.repeat(np.array([first for first, _, _ in spans], dtype=np.int64), counts)
        is_pad = offset >= np.repeat(real, counts)
        # pad rows look at the sequence's real context, never beyond, and write their keys to scratch
        last = np.maximum(begin + real, 1) - 1
        positions = np.where(is_pad, np.repeat(last, counts), np.repeat(begin, counts) + offset)
        token_seq = np.repeat(np.array(order, dtype=np.int32), counts)
        bs = self.block_size
        blocks = tables[token_seq, np.where(is_pad, 0, positions // bs)].astype(np.int64)
        slots = np.where(is_pad, self.scratch_slot, blocks * bs + positions % bs)
        # A finished member of a static batch still runs its whole row, LM head included, as a padded
        # batch does; its logits are computed and thrown away.
        sample_rows = [last_row[i] for i, c in enumerate(chunks) if c.yields_token]
        sample_rows += [last_row[i] + c.num_pad for i, c in enumerate(chunks) if not c.num_tokens and c.num_pad]
        num_short_rows = spans[num_short_chunks - 1][1] if num_short_chunks else 0
        pos = torch.from_numpy(positions)
        return {
            "ids": torch.tensor(ids, dtype=torch.int64),
            "positions": pos,
            "slots": torch.from_numpy(slots),
            "token_seq": torch.from_numpy(token_seq),
            "token_pos": pos.to(torch.int32),
            "block_tables": torch.from_numpy(tables),
            "sample_rows": torch.tensor(sample_rows, dtype=torch.int64),
            "num_samples": sum(c.yields_token for c in chunks),
            "max_len": int(positions.max()) + 1 if len(ids) else 1,
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
        heads, kv_heads, dim = self.num_heads, self.num_kv_heads, self.head_dim
        fused = self._fused
        hidden = F.embedding(batch["ids"], fused.embed)
        cos, sin = fused.rope.lookup(batch["positions"], batch["max_len"] - 1)
        num_tokens = hidden.shape[0]
        for index, layer in enumerate(fused.layers):
            qkv = layer.qkv(rms_norm(hidden, layer.input_norm)).view(num_tokens, heads + 2 * kv_heads, dim)
            qk, v = qkv[:, : heads + kv_heads], qkv[:, heads + kv_heads :]
            if layer.q_norm is not None and layer.k_norm is not None:
                qk = torch.cat((rms_norm(qk[:, :heads], layer.q_norm), rms_norm(qk[:, heads:], layer.k_norm)), 1)
            qk = apply_rope(qk, cos, sin)
            q, k = qk[:, :heads].contiguous(), qk[:, heads:]
            self.k_cache[index].index_copy_(0, batch["slots"], k)
            self.v_cache[index].index_copy_(0, batch["slots"], v)
            out = self._attention(index, q, k, v, batch)
            hidden += layer.o(out.view(num_tokens, heads * dim))
            hidden += layer.mlp(rms_norm(hidden, layer.post_norm))
        rows = batch["sample_rows"]
        if rows.numel() == 0:
            return []
        return greedy(fused.logits(hidden.index_select(0, rows)))[: batch["num_samples"]]

    def _attention(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, batch: dict[str, Any]
    ) -> torch.Tensor:
        k_pool = self.k_cache[layer].view(-1, self.num_kv_heads, self.head_dim)
        v_pool = self.v_cache[layer].view(-1, self.num_kv_heads, self.head_dim)
        out = torch.empty_like(q)
        short = batch["num_short_rows"] if self._native is not None else 0
        if short:
            tables = batch["block_tables"]
            failed = self._native.paged_attention(
                q.data_ptr(),
                k_pool.data_ptr(),
                v_pool.data_ptr(),
                tables.data_ptr(),
                tables.shape[1],
                batch["token_seq"].data_ptr(),
                batch["token_pos"].data_ptr(),
                out.data_ptr(),
                short,
                self.num_heads,
                self.num_kv_heads,
                self.head_dim,
                self.block_size,
                self.scale,
                batch["max_len"],
            )
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

    def _attention_fresh(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, start: int, end: int, count: int
    ) -> None:
        """`count` prefills of equal length starting at position 0: their own keys are their whole
        context, so one causal SDPA over [count, heads, length, dim] does them all, with no gather."""
        length = (end - start) // count

        def split(x: torch.Tensor) -> torch.Tensor:
            return x[start:end].view(count, length, x.shape[1], self.head_dim).transpose(1, 2)

        result = self._sdpa(split(q), split(k), split(v), is_causal=True)
        out[start:end] = result.transpose(1, 2).reshape(end - start, self.num_heads, self.head_dim)

    def _attention_cached(
        self,
        q: torch.Tensor,
        k_pool: torch.Tensor,
        v_pool: torch.Tensor,
        out: torch.Tensor,
        batch: dict[str, Any],
        start: int,
        end: int,
    ) -> None:
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
