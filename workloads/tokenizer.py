"""A tiny adapter over the two tokenizer kinds batchmark meets, so prompt builders need only three things.

Accepted: a `tokenizers.Tokenizer`, a transformers `PreTrainedTokenizerBase`, or any object that already has
`encode(text) -> list[int]`, `decode(ids) -> str` and `vocab_size`. Encoding never adds special tokens: the
counts are of the prompt itself, whatever BOS or chat template a server adds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenizerAdapter:
    """The encode/decode pair and vocabulary of any tokenizer, as the workloads need them."""

    encode_fn: Callable[[str], list[int]]
    decode_fn: Callable[[list[int]], str]
    vocab_size: int
    special_ids: frozenset[int] = frozenset()

    def encode(self, text: str) -> list[int]:
        return self.encode_fn(text)

    def decode(self, ids: list[int]) -> str:
        return self.decode_fn(ids)


def as_tokenizer(obj: Any) -> TokenizerAdapter:
    if isinstance(obj, TokenizerAdapter):
        return obj
    if hasattr(obj, "get_vocab_size") and hasattr(obj, "get_added_tokens_decoder"):  # tokenizers.Tokenizer
        special = frozenset(i for i, tok in obj.get_added_tokens_decoder().items() if tok.special)
        return TokenizerAdapter(
            lambda text: list(obj.encode(text, add_special_tokens=False).ids),
            lambda ids: obj.decode(ids, skip_special_tokens=False),
            int(obj.get_vocab_size(with_added_tokens=True)),
            special,
        )
    if hasattr(obj, "all_special_ids") and hasattr(obj, "convert_ids_to_tokens"):  # transformers
        return TokenizerAdapter(
            lambda text: list(obj.encode(text, add_special_tokens=False)),
            lambda ids: obj.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False),
            len(obj),  # vocab_size leaves out added tokens, which are valid ids too
            frozenset(int(i) for i in obj.all_special_ids),
        )
    if callable(getattr(obj, "encode", None)) and callable(getattr(obj, "decode", None)):
        return TokenizerAdapter(
            lambda text: list(obj.encode(text)),
            lambda ids: obj.decode(ids),
            int(obj.vocab_size),
            frozenset(getattr(obj, "special_ids", ())),
        )
    raise TypeError(f"not a tokenizer: {type(obj).__name__} has no encode/decode")
