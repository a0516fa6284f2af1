"""Prompt text to token ids for the server: bounded before any tokenizing, and off the event loop.

A 3 MB text prompt tokenized on the event loop held `/health` for 6.5 s, and a 31 MB one (under the
32 MiB body limit) took 98 s to earn its 400 while memory grew from 0.7 to 3.6 GB. So:

- a text is refused unread when even the longest token of the vocabulary, repeated, could not fit it
  into the model context: `len(text) > longest_token_chars x max_context`;
- what is left is tokenized on a small thread pool (the tokenizers library releases the GIL), so the
  event loop keeps answering; short texts, the common case, stay inline, where a thread hop would cost
  more than the tokenizing.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engines.serve.chat import chat_prompt_ids
from engines.serve.errors import invalid

INLINE_CHARS = 2048  # below this, tokenizing takes microseconds: no thread hop
TOKENIZER_THREADS = 2


def longest_token_chars(tokenizer: Any) -> int:
    """Characters in the vocabulary's longest token (byte-level marks count as one each: an overestimate)."""
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    return max((len(token) for token in vocab), default=64) or 1


class PromptTokenizer:
    """The server's one way from prompt text (or chat messages) to ids."""

    def __init__(self, tokenizer: Any, max_context: int | None) -> None:
        self.tokenizer = tokenizer
        self.max_context = max_context
        self.token_chars = longest_token_chars(tokenizer)
        self.max_chars = self.token_chars * max_context if max_context else None
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    async def ids(self, *, text: str | None = None, messages: list[dict[str, str]] | None = None) -> list[int]:
        field = "messages" if messages is not None else "prompt"
        chars = sum(len(m["content"]) for m in messages) if messages is not None else len(text or "")
        if self.max_chars is not None and chars > self.max_chars:
            raise invalid(
                field,
                f"{chars} characters cannot fit the model context of {self.max_context} tokens "
                f"(no token is longer than {self.token_chars} characters)",
            )
        if chars <= INLINE_CHARS:
            ids = self._encode(text, messages)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(TOKENIZER_THREADS, thread_name_prefix="batchmark-tokenize")
            ids = await asyncio.get_running_loop().run_in_executor(self._pool, self._encode, text, messages)
        if not ids:
            raise invalid(field, "tokenizes to no tokens")
        return ids

    def _encode(self, text: str | None, messages: list[dict[str, str]] | None) -> list[int]:
        if messages is not None:
            return chat_prompt_ids(self.tokenizer, messages)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
