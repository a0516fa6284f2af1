"""Test helpers for the engines: reference decoding and seeded request sets."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import torch

from engines.api import Request
from engines.inprocess import EngineOptions, InProcessEngine
from harness.bench_engines import EngineRun, run_offline


def reference_greedy(model: Any, prompt: list[int], max_tokens: int) -> list[int]:
    """Unbatched (batch size 1) greedy decode with transformers' own generate and its own cache."""
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.int64),
            max_new_tokens=max_tokens,
            min_new_tokens=max_tokens,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=model.config.pad_token_id,
        )
    return out[0, len(prompt) :].tolist()


def mixed_requests(count: int, seed: int, vocab: int, prompt=(4, 96), output=(1, 48)) -> list[Request]:
    rng = np.random.default_rng(seed)
    requests = []
    for i in range(count):
        length = int(rng.integers(prompt[0], prompt[1] + 1))
        ids = rng.integers(3, vocab, size=length).tolist()  # 0..2 are special tokens
        requests.append(Request(f"q{i:03d}", ids, int(rng.integers(output[0], output[1] + 1)), ignore_eos=True))
    return requests


def run_engine(loaded: Any, options: EngineOptions, requests: list[Request]) -> EngineRun:
    return asyncio.run(run_offline(InProcessEngine(loaded, options), requests))
