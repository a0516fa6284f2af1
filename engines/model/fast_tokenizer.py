"""The embedded model's tokenizer on the `tokenizers` library alone, with the transformers surface batchmark uses.

transformers' AutoTokenizer cost 1.7 s of CPU to import on this machine, for a wrapper around the same Rust
tokenizer. This class reads the shipped tokenizer.json and tokenizer_config.json and answers as
PreTrainedTokenizerFast does for them (same ids, same text; tests/engines/test_fast_tokenizer.py compares
the two): the special tokens by name and id, `tok(text)["input_ids"]`, `encode`, `decode`, the vocabulary.
It has no chat template (the shipped tokenizer has none: serve uses its fallback template) and is meant for
that tokenizer only; any other directory loads through transformers (engines/model/loader.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

FILES = ("tokenizer.json", "tokenizer_config.json")


class FastTokenizer:
    chat_template = None

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.backend = Tokenizer.from_file(str(directory / "tokenizer.json"))
        config = json.loads((directory / "tokenizer_config.json").read_text())
        self.bos_token: str | None = config.get("bos_token")
        self.eos_token: str | None = config.get("eos_token")
        self.pad_token: str | None = config.get("pad_token")
        self.model_max_length = int(config.get("model_max_length", 0))
        self.bos_token_id = self._id(self.bos_token)
        self.eos_token_id = self._id(self.eos_token)
        self.pad_token_id = self._id(self.pad_token)
        named = (self.bos_token_id, self.eos_token_id, self.pad_token_id)
        self.all_special_ids = list(dict.fromkeys(t for t in named if t is not None))

    def _id(self, token: str | None) -> int | None:
        return None if token is None else self.backend.token_to_id(token)

    @property
    def vocab_size(self) -> int:
        """Without added tokens, as transformers counts it; len() counts them."""
        return self.backend.get_vocab_size(with_added_tokens=False)

    def __len__(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self.backend.get_vocab(with_added_tokens=True)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.backend.encode(text, add_special_tokens=add_special_tokens).ids

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = self.encode(text, add_special_tokens)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)}

    def decode(self, ids: int | list[int], skip_special_tokens: bool = False, **_: Any) -> str:
        """transformers' clean_up_tokenization_spaces is ignored: the config turns it off, and transformers
        skips it for BPE tokenizers in any case."""
        return self.backend.decode([ids] if isinstance(ids, int) else list(ids), skip_special_tokens)

    def convert_ids_to_tokens(self, ids: int | list[int]) -> str | list[str | None] | None:
        if isinstance(ids, int):
            return self.backend.id_to_token(ids)
        return [self.backend.id_to_token(i) for i in ids]

    def save_pretrained(self, directory: str | Path) -> None:
        """The shipped files, copied: a directory transformers' AutoTokenizer loads as the same tokenizer."""
        Path(directory).mkdir(parents=True, exist_ok=True)
        for name in FILES:
            shutil.copyfile(self.directory / name, Path(directory) / name)
