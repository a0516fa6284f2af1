"""The embedded default model: a small Llama built from a config with seeded random weights.

Random weights make the text meaningless but the compute real: every step is a genuine transformer
forward pass with a KV cache, which is all a scheduler benchmark needs. No file is downloaded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # transformers loads torch: imported when the model is built, not with this module
    from transformers import LlamaForCausalLM

TOKENIZER_DIR = Path(__file__).with_name("tokenizer")


@dataclass(frozen=True)
class EmbeddedModelConfig:
    """The embedded Llama's shape and seed: small enough for 2 CPU cores, a real transformer."""

    hidden_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    intermediate_size: int = 688
    vocab_size: int = 8192
    max_position_embeddings: int = 16384
    rope_theta: float = 10000.0
    seed: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def build_embedded_model(cfg: EmbeddedModelConfig) -> LlamaForCausalLM:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads,
        intermediate_size=cfg.intermediate_size,
        vocab_size=cfg.vocab_size,
        max_position_embeddings=cfg.max_position_embeddings,
        rope_theta=cfg.rope_theta,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=2,
        tie_word_embeddings=False,
    )
    fork_state = torch.random.get_rng_state()
    torch.manual_seed(cfg.seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(fork_state)  # seeding the weights must not reseed the caller
    return model.eval()
