"""The embedded default model: a small Llama built from a config with seeded random weights.

Random weights make the text meaningless but the compute real: every step is a genuine transformer
forward pass with a KV cache, which is all a scheduler benchmark needs. No file is downloaded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported when the model is built, not with this module
    from engines.model.llama import LlamaConfig, LlamaForCausalLM

TOKENIZER_DIR = Path(__file__).with_name("tokenizer")
BOS_ID, EOS_ID, PAD_ID = 0, 1, 2  # the shipped tokenizer's special tokens (engines/model/build_tokenizer.py)


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

    def llama_config(self) -> LlamaConfig:
        from engines.model.llama import LlamaConfig

        shape = {k: v for k, v in self.to_dict().items() if k != "seed"}
        return LlamaConfig(**shape, bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID)


def build_embedded_model(cfg: EmbeddedModelConfig) -> LlamaForCausalLM:
    """The plain-torch Llama (engines/model/llama.py) with the weights transformers' LlamaForCausalLM draws
    from the same seed: the same model, and the same weight hash in the manifest, without transformers."""
    import torch

    from engines.model.llama import LlamaForCausalLM

    fork_state = torch.random.get_rng_state()
    torch.manual_seed(cfg.seed)
    try:
        model = LlamaForCausalLM(cfg.llama_config())
    finally:
        torch.random.set_rng_state(fork_state)  # seeding the weights must not reseed the caller
    return model.eval()
