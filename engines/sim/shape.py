"""A transformer's shape from its Hugging Face config.json: parameters, KV bytes per token, FLOPs.

Decoder-only, pre-norm, gated MLP (Llama, Qwen2, Mistral): per layer q/k/v/o projections and three MLP
matrices; an embedding table and an LM head (shared when `tie_word_embeddings`). Norms and biases are
a rounding error and are left out of the FLOPs (their bytes are counted with the weights).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engines.errors import EngineInputError
from engines.sim.files import read_json_object

CONFIG_DIR = Path(__file__).with_name("configs")
REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "float8": 1, "int8": 1}


@dataclass(frozen=True)
class ModelShape:
    name: str
    source: str  # the config file it came from
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    max_context: int
    tied_embeddings: bool

    @property
    def layer_params(self) -> int:
        """Weights of one layer's matrices (q, k, v, o and the gated MLP's three)."""
        q_o = 2 * self.hidden * self.heads * self.head_dim
        k_v = 2 * self.hidden * self.kv_heads * self.head_dim
        return q_o + k_v + 3 * self.hidden * self.intermediate

    @property
    def lm_head_params(self) -> int:
        return self.hidden * self.vocab

    @property
    def params(self) -> int:
        """All weights: layers, embedding table, LM head (once when tied), norms."""
        embed = self.vocab * self.hidden
        norms = (2 * self.layers + 1) * self.hidden
        return self.layers * self.layer_params + embed + (0 if self.tied_embeddings else self.lm_head_params) + norms

    def kv_bytes_per_token(self, element_bytes: int = 2) -> int:
        """Keys and values of one token in every layer."""
        return 2 * self.layers * self.kv_heads * self.head_dim * element_bytes

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "params": self.params, "kv_bytes_per_token_bf16": self.kv_bytes_per_token()}


def known_models() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_shape(name_or_path: str) -> ModelShape:
    """A shipped config by name (`llama-3.1-8b`) or any config.json path; bad input raises one line."""
    path = Path(name_or_path)
    if not (path.suffix == ".json" or "/" in name_or_path or path.exists()):
        path = CONFIG_DIR / f"{name_or_path.lower()}.json"
        if not path.is_file():
            raise EngineInputError(
                f"sim: unknown model {name_or_path!r} (known: {', '.join(known_models())}; or give a config.json path)"
            )
    if path.is_dir():
        path = path / "config.json"
    config = read_json_object(path, "model config")
    config = config.get("text_config", config) if "hidden_size" not in config else config
    return shape_from_config(
        config, name=path.stem if path.name != "config.json" else path.parent.name, source=str(path)
    )


# no model dimension or context reaches 2**31; above it is a typo or a hostile file (2**70 ran)
MAX_DIMENSION = 1 << 31


def shape_from_config(config: dict[str, Any], *, name: str, source: str) -> ModelShape:
    for key in REQUIRED:
        value = config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_DIMENSION:
            problem = "missing" if key not in config else f"{value!r} is not an integer 1..2**31"
            raise EngineInputError(f"{source}: field {key!r} {problem}; the roofline cost model needs it")
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    for key, value in (("num_key_value_heads", kv_heads), ("head_dim", head_dim)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_DIMENSION:
            raise EngineInputError(f"{source}: field {key!r} {value!r} is not an integer 1..2**31")
    max_context = config.get("max_position_embeddings")  # absent or null: unbounded
    if max_context is not None and (
        isinstance(max_context, bool) or not isinstance(max_context, int) or not 0 < max_context <= MAX_DIMENSION
    ):
        raise EngineInputError(f"{source}: field 'max_position_embeddings' {max_context!r} is not an integer 1..2**31")
    if heads % kv_heads:
        raise EngineInputError(
            f"{source}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
        )
    return ModelShape(
        name=name,
        source=source,
        layers=config["num_hidden_layers"],
        hidden=config["hidden_size"],
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=config["intermediate_size"],
        vocab=config["vocab_size"],
        max_context=max_context or 1 << 31,
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
    )
