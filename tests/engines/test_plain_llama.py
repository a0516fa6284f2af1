"""The embedded model in plain torch (engines/model/llama.py) is transformers' LlamaForCausalLM: the same seeded
weights (so the manifest's weight hash is unchanged), the same logits, the same greedy tokens."""

from __future__ import annotations

import pytest
import torch

from engines.model.embedded import EmbeddedModelConfig, build_embedded_model
from engines.model.loader import load_model, weight_sha256

# The embedded model's hash before it left transformers (main at 42aedee): runs recorded since keep naming it.
EMBEDDED_WEIGHT_SHA256 = "51ace473eae08881a40e80bdd1fecbb416be58f9a74f7453045f4dfa216c03c7"
PROMPTS = [[0, 17, 400, 2051, 9, 33], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17], [8191, 3, 4000, 2]]


def transformers_build(cfg: EmbeddedModelConfig):
    """What build_embedded_model did with transformers: its class, the same config, the same seed."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        return LlamaForCausalLM(LlamaConfig(**cfg.llama_config().to_transformers())).eval()


@pytest.fixture(scope="module", params=[0, 7], ids=["seed0", "seed7"])
def pair(request):
    cfg = EmbeddedModelConfig(seed=request.param)
    return build_embedded_model(cfg), transformers_build(cfg)


def test_same_parameters_and_weights(pair) -> None:
    plain, reference = pair
    ours, theirs = plain.state_dict(), reference.state_dict()
    assert list(ours) == list(theirs)
    assert all(torch.equal(ours[name], theirs[name]) for name in ours)
    assert weight_sha256(plain) == weight_sha256(reference)


def test_the_recorded_hash_is_unchanged() -> None:
    assert weight_sha256(build_embedded_model(EmbeddedModelConfig())) == EMBEDDED_WEIGHT_SHA256


def test_building_does_not_reseed_the_caller() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_embedded_model(EmbeddedModelConfig(seed=5))
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("prompt", PROMPTS, ids=["bos", "counting", "short"])
def test_same_logits(pair, prompt: list[int]) -> None:
    plain, reference = pair
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        ours, theirs = plain(ids), reference(ids).logits
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)


def test_same_greedy_tokens(pair) -> None:
    plain, reference = pair
    for prompt in PROMPTS:
        ours, theirs = list(prompt), list(prompt)
        with torch.inference_mode():
            for _ in range(8):  # whole-sequence forwards, no cache: the models' maths alone
                ours.append(int(plain(torch.tensor([ours]))[0, -1].argmax()))
                theirs.append(int(reference(torch.tensor([theirs])).logits[0, -1].argmax()))
        assert ours == theirs


def test_the_embedded_model_in_bfloat16_loads_and_hashes_its_own_bytes() -> None:
    # numpy has no bfloat16: hashing went through it and `--dtype bfloat16` crashed with a TypeError
    loaded = load_model(None, dtype="bfloat16")
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    assert len(loaded.describe()["weight_sha256"]) == 64
    assert loaded.describe()["weight_sha256"] != EMBEDDED_WEIGHT_SHA256  # other bytes, another hash
