"""Streaming detokenization: the text each new token adds, without splitting a multi-byte character.

A byte-level BPE token can end in the middle of a UTF-8 sequence, so decoding tokens one at a time
gives replacement characters. As vLLM and TGI do, decode a short window twice (before and after the
new token) and emit the difference only once it no longer ends in an incomplete character.
"""

from __future__ import annotations

from typing import Any


class IncrementalDetokenizer:
    """Text for a growing list of token ids, emitted only once it can no longer change."""

    __slots__ = ("_ids", "_prefix", "_read", "_tok")

    def __init__(self, tokenizer: Any) -> None:
        self._tok = tokenizer
        self._ids: list[int] = []
        self._prefix = 0  # start of the window that gives context to the next decode
        self._read = 0  # tokens already turned into emitted text

    def step(self, token_id: int) -> str:
        self._ids.append(token_id)
        decode = self._tok.decode
        before = decode(self._ids[self._prefix : self._read], skip_special_tokens=True)
        after = decode(self._ids[self._prefix :], skip_special_tokens=True)
        if len(after) > len(before) and not after.endswith("\ufffd"):
            self._prefix, self._read = self._read, len(self._ids)
            return after[len(before) :]
        return ""

    def flush(self) -> str:
        """At the end: whatever is still held back, replacement characters and all."""
        if self._read >= len(self._ids):
            return ""
        decode = self._tok.decode
        before = decode(self._ids[self._prefix : self._read], skip_special_tokens=True)
        after = decode(self._ids[self._prefix :], skip_special_tokens=True)
        self._prefix = self._read = len(self._ids)
        return after[len(before) :]
