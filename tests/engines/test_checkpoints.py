"""`--model PATH` loads any local Hugging Face checkpoint of a supported architecture, offline."""

from __future__ import annotations

import pytest
import torch

from engines.inprocess import EngineOptions
from engines.model.loader import load_model
from tests.engines.helpers import mixed_requests, reference_greedy, run_engine, transformers_twin


def test_saved_embedded_checkpoint_gives_the_same_tokens(embedded, tmp_path):
    transformers_twin(embedded.model).save_pretrained(tmp_path)  # the embedded model as a checkpoint
    embedded.tokenizer.save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path))
    assert loaded.weight_hash == embedded.weight_hash
    assert loaded.describe()["source"] == str(tmp_path)
    requests = mixed_requests(6, seed=11, vocab=embedded.model.config.vocab_size, output=(2, 12))
    a = run_engine(embedded, EngineOptions(kind="continuous"), requests)
    b = run_engine(loaded, EngineOptions(kind="continuous"), requests)
    assert a.tokens_by_request == b.tokens_by_request


@pytest.fixture
def qwen2_dir(embedded, tmp_path):
    """A different architecture: grouped-query attention and biased q/k/v projections."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=256,
        vocab_size=8192,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        eos_token_id=1,
        pad_token_id=2,
        bos_token_id=0,
    )
    torch.manual_seed(5)
    model = Qwen2ForCausalLM(config).eval()
    with torch.no_grad():  # transformers zero-initialises biases; make them matter
        for layer in model.model.layers:
            layer.self_attn.q_proj.bias.normal_(0, 0.5)
            layer.self_attn.k_proj.bias.normal_(0, 0.5)
    model.save_pretrained(tmp_path)
    embedded.tokenizer.save_pretrained(tmp_path)
    return tmp_path


def test_qwen2_gqa_checkpoint_matches_reference(qwen2_dir):
    loaded = load_model(str(qwen2_dir))
    assert loaded.describe()["architecture"] == "Qwen2ForCausalLM"
    requests = mixed_requests(8, seed=2, vocab=8192, output=(2, 16))
    run = run_engine(loaded, EngineOptions(kind="continuous"), requests)
    for request in requests:
        expected = reference_greedy(loaded.model, list(request.prompt_token_ids), request.max_tokens)
        assert run.tokens_by_request[request.request_id] == expected
