"""The native paged-attention kernel against plain SDPA on gathered keys, including GQA."""

from __future__ import annotations

import pytest
import torch

from engines.kernels import kernel_info, load_paged_attention


@pytest.mark.parametrize(("heads", "kv_heads", "block_size"), [(4, 4, 16), (8, 2, 4), (2, 1, 1)])
def test_kernel_matches_sdpa(heads, kv_heads, block_size):
    lib = load_paged_attention()
    assert lib is not None, kernel_info()
    gen = torch.Generator().manual_seed(heads * 100 + kv_heads)
    dim, num_blocks = 32, 64
    k_pool = torch.randn(num_blocks * block_size, kv_heads, dim, generator=gen)
    v_pool = torch.randn(num_blocks * block_size, kv_heads, dim, generator=gen)
    lengths = [1, 7, 33]  # sequences; queries at a mix of positions (prefill chunk + decode)
    tables = torch.zeros(len(lengths), 40, dtype=torch.int32)
    perm = torch.randperm(num_blocks, generator=gen)
    used = 0
    for row, length in enumerate(lengths):
        need = -(-length // block_size)
        tables[row, :need] = perm[used : used + need].to(torch.int32)
        used += need
    token_seq = torch.tensor([0, 1, 1, 1, 2, 2], dtype=torch.int32)
    token_pos = torch.tensor([0, 4, 5, 6, 20, 32], dtype=torch.int32)
    q = torch.randn(len(token_seq), heads, dim, generator=gen)
    out = torch.empty_like(q)
    scale = dim**-0.5
    failed = lib.paged_attention(
        q.data_ptr(),
        k_pool.data_ptr(),
        v_pool.data_ptr(),
        tables.data_ptr(),
        40,
        token_seq.data_ptr(),
        token_pos.data_ptr(),
        out.data_ptr(),
        len(token_seq),
        heads,
        kv_heads,
        dim,
        block_size,
        scale,
        33,
    )
    assert failed == 0
    for t in range(len(token_seq)):
        length = int(token_pos[t]) + 1
        ar = torch.arange(length)
        slots = tables[token_seq[t]].long()[ar // block_size] * block_size + ar % block_size
        k = k_pool[slots].transpose(0, 1).repeat_interleave(heads // kv_heads, dim=0)
        v = v_pool[slots].transpose(0, 1).repeat_interleave(heads // kv_heads, dim=0)
        expected = torch.nn.functional.scaled_dot_product_attention(q[t].unsqueeze(1), k, v, scale=scale)
        torch.testing.assert_close(out[t], expected.squeeze(1), rtol=1e-5, atol=1e-5)
