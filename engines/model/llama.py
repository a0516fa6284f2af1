"""A Llama causal LM in plain torch, for the embedded model: transformers' module tree without transformers.

Importing transformers' Llama modelling code cost 6.6 s of CPU on this machine (it brings torch.distributed,
sympy, torch._dynamo and scipy with it), half of what `batchmark serve` spent before answering
(docs/measurements/2026-12-05-serve-start-plain-torch.md). The engines read only a model's weights and
config (engines/fused_layers.py), so the embedded model is built here: the same parameter names, the same
seeded weights, drawn in transformers' order, and the same forward maths (RMSNorm in float32, rotary
embeddings on the two halves, grouped-query attention, SiLU-gated MLP).
tests/engines/test_plain_llama.py holds it to transformers' LlamaForCausalLM: equal weights, logits and
greedy tokens. A local checkpoint (`--model DIR`) still loads through transformers (engines/model/loader.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class LlamaConfig:
    """The fields of transformers' LlamaConfig this model reads, with its defaults (attributes of the same
    names, so code written against a transformers model reads this one alike)."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    initializer_range: float = 0.02
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    pad_token_id: int | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_transformers(self) -> dict[str, object]:
        """Keyword arguments of transformers' LlamaConfig for the same model (untied embeddings, no biases)."""
        return {**asdict(self), "tie_word_embeddings": False, "hidden_act": "silu"}


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps  # transformers' name: engines/fused_layers.py reads it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dtype)


class LlamaRotaryEmbedding(nn.Module):
    rope_type = "default"  # fixed frequencies: engines/fused_layers.py tabulates cos and sin once

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        dim = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.inv_freq = nn.Buffer(inv_freq, persistent=False)  # not a weight: outside state_dict, as there

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin [batch, positions, head_dim] in x's dtype, computed in float32."""
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.head_dim = config.head_dim
        self.scaling = self.head_dim**-0.5
        self.gqa = config.num_key_value_heads != config.num_attention_heads
        hidden, q_out = config.hidden_size, config.num_attention_heads * self.head_dim
        kv_out = config.num_key_value_heads * self.head_dim
        self.q_proj = nn.Linear(hidden, q_out, bias=False)
        self.k_proj = nn.Linear(hidden, kv_out, bias=False)
        self.v_proj = nn.Linear(hidden, kv_out, bias=False)
        self.o_proj = nn.Linear(q_out, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Causal self-attention over x [batch, tokens, hidden], every token from position 0 (no cache)."""
        batch, tokens, _ = x.shape
        q, k, v = (
            p(x).view(batch, tokens, -1, self.head_dim).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj)
        )
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scaling, enable_gqa=self.gqa)
        return self.o_proj(out.transpose(1, 2).reshape(batch, tokens, -1))


class LlamaMLP(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList(LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        cos, sin = self.rotary_emb(x, positions)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    """transformers' class name and parameter names (`model.layers.0.self_attn.q_proj.weight`, `lm_head.weight`):
    the manifest records the architecture by this name and hashes the weights by those."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        _init_weights(self.model, config.initializer_range)  # transformers initialises the inner model here
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        _init_weights(self.lm_head, config.initializer_range)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits [batch, tokens, vocab] of input_ids [batch, tokens] (whole sequences, no padding, no cache)."""
        return self.lm_head(self.model(input_ids))


@torch.no_grad()
def _init_weights(root: nn.Module, std: float) -> None:
    """transformers' initialisation, in its order (children before parents, in registration order), so one
    seed draws the same numbers: a normal(0, std) for every linear and embedding weight after torch's own
    default init has drawn its share; the embedding's padding row is zeroed again, norms stay ones."""
    for module in _post_order(root):
        if isinstance(module, nn.Linear | nn.Embedding):
            module.weight.normal_(0.0, std)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            module.weight[module.padding_idx].zero_()


def _post_order(module: nn.Module) -> list[nn.Module]:
    return [m for child in module.children() for m in _post_order(child)] + [module]
