"""Test helpers for the engines: reference decoding, seeded request sets, and an engine-only driver (the
engine tests need nothing of the harness: they submit everything at once and collect tokens and steps)."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from engines.api import Engine, FinishEvent, Request, TokenEvent
from engines.inprocess import EngineOptions, InProcessEngine


@dataclass
class EngineOutput:
    """What the engine produced: every token id per request and every step record (as its JSON)."""

    tokens_by_request: dict[str, list[int]] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)


async def _drive(engine: Engine, requests: list[Request]) -> EngineOutput:
    run = EngineOutput()
    engine.set_step_sink(lambda record: run.steps.append(record.to_json()))
    await engine.start()

    async def one(request: Request) -> None:
        out = run.tokens_by_request.setdefault(request.request_id, [])
        async for event in engine.generate(request):
            if isinstance(event, TokenEvent):
                out.append(event.token_id)
            elif isinstance(event, FinishEvent) and event.error_type:
                raise RuntimeError(event.error_message)

    try:
        await asyncio.gather(*(one(r) for r in requests))
    finally:
        await engine.stop()
        engine.set_step_sink(None)
    return run


def drive(engine: Engine, requests: list[Request]) -> EngineOutput:
    """Submit every request at once and wait for all of them."""
    return asyncio.run(_drive(engine, requests))


_TWINS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def transformers_twin(model: Any) -> Any:
    """transformers' LlamaForCausalLM holding the plain-torch embedded model's weights (a transformers model
    is its own twin): the reference the engines' tokens are checked against."""
    if hasattr(model, "generate"):
        return model
    twin = _TWINS.get(model)
    if twin is None:
        from transformers import LlamaConfig, LlamaForCausalLM

        with torch.random.fork_rng():  # its random init is overwritten: it must not move the caller's seed
            twin = LlamaForCausalLM(LlamaConfig(**model.config.to_transformers()))
        twin = twin.to(next(model.parameters()).dtype)
        twin.load_state_dict(model.state_dict())
        twin = _TWINS[model] = twin.eval()
    return twin


def reference_greedy(model: Any, prompt: list[int], max_tokens: int) -> list[int]:
    """Unbatched (batch size 1) greedy decode with transformers' own generate and its own cache."""
    model = transformers_twin(model)
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


def run_engine(loaded: Any, options: EngineOptions, requests: list[Request]) -> EngineOutput:
    return drive(InProcessEngine(loaded, options), requests)
