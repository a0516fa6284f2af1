"""Load the model under test: the embedded one, or any local Hugging Face causal-LM directory."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.errors import ModelLoadError
from engines.model.embedded import TOKENIZER_DIR, EmbeddedModelConfig, build_embedded_model

# Decoder-only architectures whose layers the model runner drives directly (q/k/v/o projections,
# RoPE, RMSNorm, gated MLP). Others are refused with a clear line rather than run incorrectly.
SUPPORTED_ARCHITECTURES = (
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
)


@dataclass
class LoadedModel:
    """A model and its tokenizer, with the hashes and config the run manifest records."""

    model: Any  # in eval mode: the embedded plain-torch Llama, or a checkpoint's transformers PreTrainedModel
    tokenizer: Any  # the embedded FastTokenizer, or a checkpoint's transformers PreTrainedTokenizerFast
    source: str  # "embedded" or the checkpoint path
    config: dict[str, Any] = field(default_factory=dict)
    weight_hash: str = ""
    tokenizer_hash: str = ""

    @property
    def eos_token_id(self) -> int | None:
        eos = self.model.config.eos_token_id
        return eos[0] if isinstance(eos, list) else eos

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    @property
    def special_token_ids(self) -> tuple[int, ...]:
        """bos, eos and pad: ids a generated prompt avoids, so that it holds exactly the tokens it counts."""
        tok = self.tokenizer
        return tuple(sorted({t for t in (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) if t is not None}))

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "architecture": type(self.model).__name__,
            "config": self.config,
            "weight_sha256": self.weight_hash,
            "tokenizer_sha256": self.tokenizer_hash,
            "dtype": str(next(self.model.parameters()).dtype).removeprefix("torch."),
        }


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def weight_sha256(model: Any) -> str:
    import torch  # with the model: this module is imported before torch is needed

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        # the raw bytes, read as uint8: numpy has no bfloat16 (`--dtype bfloat16` crashed here); same bytes as
        # numpy's view for the dtypes it has, so float32 hashes are unchanged
        digest.update(tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _tokenizer_sha256(directory: Path) -> str:
    digest = hashlib.sha256()
    for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "merges.txt"):
        path = directory / name
        if path.is_file():
            digest.update(name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class LoadedTokenizer:
    """A tokenizer on its own: the target's, to build prompts of exact lengths for it (no weights loaded)."""

    tokenizer: Any  # the embedded FastTokenizer, or a transformers tokenizer
    source: str  # "embedded" or the directory
    sha256: str

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sha256": self.sha256,
            "vocab_size": len(self.tokenizer),
            "chat_template": bool(getattr(self.tokenizer, "chat_template", None)),
        }


def load_tokenizer(path: str | None = None) -> LoadedTokenizer:
    """`path=None`: the embedded model's tokenizer; otherwise a local Hugging Face tokenizer (or model) directory."""
    _offline()
    if path is None:
        from engines.model.fast_tokenizer import FastTokenizer

        return LoadedTokenizer(FastTokenizer(TOKENIZER_DIR), "embedded", _tokenizer_sha256(TOKENIZER_DIR))
    from transformers import AutoTokenizer

    directory = Path(path)
    if not directory.is_dir():
        raise ModelLoadError(f"--tokenizer {str(directory)!r}: no such directory")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    except Exception as exc:  # transformers raises many types for a broken tokenizer directory
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"--tokenizer {str(directory)!r}: cannot load a tokenizer: {first}") from None
    return LoadedTokenizer(tokenizer, str(directory), _tokenizer_sha256(directory))


def load_model(path: str | None = None, *, dtype: str = "float32", seed: int = 0) -> LoadedModel:
    """`path=None` builds the embedded model (torch and `tokenizers` only: transformers is not imported);
    otherwise `path` must be a local checkpoint directory."""
    _offline()
    import torch

    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if torch_dtype is None:
        raise ModelLoadError(f"--dtype {dtype!r}: expected float32, bfloat16 or float16")
    if path is None:
        cfg = EmbeddedModelConfig(seed=seed)
        model = build_embedded_model(cfg).to(torch_dtype)
        tokenizer = load_tokenizer(None)
        return LoadedModel(
            model=model,
            tokenizer=tokenizer.tokenizer,
            source="embedded",
            config={**cfg.to_dict(), "architecture": "LlamaForCausalLM"},
            weight_hash=weight_sha256(model),
            tokenizer_hash=tokenizer.sha256,
        )
    return _load_checkpoint(Path(path), torch_dtype)


def check_checkpoint(directory: Path) -> dict[str, Any]:
    """The checkpoint's config.json, refused (ModelLoadError) when it cannot be a model this loader takes.
    Reads one file and imports nothing: a CLI calls it before it imports torch (seconds)."""
    if not directory.is_dir():
        raise ModelLoadError(f"--model {str(directory)!r}: no such directory")
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise ModelLoadError(f"--model {str(directory)!r}: config.json is missing (not a checkpoint)")
    try:
        raw = json.loads(config_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{config_path}: invalid JSON ({exc})") from None
    except RecursionError:  # json recurses per nesting level
        raise ModelLoadError(f"{config_path}: nested too deeply to be a model config") from None
    if not isinstance(raw, dict):
        raise ModelLoadError(f"{config_path}: holds {type(raw).__name__}, not one JSON object")
    architectures = raw.get("architectures") or []
    if not isinstance(architectures, list):
        raise ModelLoadError(f"{config_path}: field architectures: {architectures!r} is not a list of names")
    if not any(arch in SUPPORTED_ARCHITECTURES for arch in architectures):
        raise ModelLoadError(
            f"{config_path}: architectures {architectures}: supported are {', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    return raw


def _load_checkpoint(directory: Path, torch_dtype: Any) -> LoadedModel:
    raw = check_checkpoint(directory)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        model = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True, dtype=torch_dtype).eval()
    except Exception as exc:  # transformers raises many types for a broken checkpoint
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"--model {str(directory)!r}: cannot load weights: {first}") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"--model {str(directory)!r}: cannot load tokenizer: {first}") from None
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        source=str(directory),
        config=raw,
        weight_hash=weight_sha256(model),
        tokenizer_hash=_tokenizer_sha256(directory),
    )
