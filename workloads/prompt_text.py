"""Text prompts that tokenize back to an exact length, for targets reached over HTTP.

A prompt is words drawn from the tokenizer's own vocabulary, joined by spaces; it is encoded, then trimmed
or extended with one-token words until the count is right. What still differs after a few rounds is
reported, never hidden. Prefix blocks (Mooncake hash ids) become fixed word runs of 512 tokens each, so
requests sharing hash ids share a leading text. A later turn of a session is its previous turn's text, words
for that turn's answer, and new words: the history is a leading text it shares.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from workloads.model import Workload
from workloads.prompts import ANSWER_STREAM, BLOCK_TOKENS, block_seed, request_seed
from workloads.tokenizer import TokenizerAdapter, as_tokenizer

MAX_SCANNED_IDS = 20_000  # enough words from any vocabulary; keeps the scan well under a second
FIT_ROUNDS = 8
FALLBACK_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "as",
    "with",
    "by",
    "at",
    "it",
    "from",
    "that",
    "this",
    "be",
    "are",
    "or",
    "an",
    "not",
    "which",
    "have",
    "one",
    "all",
)


@dataclass(frozen=True)
class WordPool:
    """Words with their token counts under one tokenizer, to build text of an exact token length."""

    words: tuple[str, ...]
    counts: dict[str, int]  # tokens in " " + word
    fillers: tuple[str, ...]  # words that are one token after a space: the unit of fine adjustment


def word_pool(tok: TokenizerAdapter) -> WordPool:
    step = max(1, tok.vocab_size // MAX_SCANNED_IDS)
    found = set()
    for i in range(0, tok.vocab_size, step):
        if i in tok.special_ids:
            continue
        piece = tok.decode([i]).strip()
        if 2 <= len(piece) <= 12 and piece.isalpha():
            found.add(piece)
    words = tuple(sorted(found)) or FALLBACK_WORDS
    counts = {w: len(tok.encode(" " + w)) for w in words}
    fillers = tuple(w for w in words if counts[w] == 1)
    if not fillers:  # a vocabulary without whole words: single letters usually are one token
        letters = [c for c in "abcdefghijklmnopqrstuvwxyz" if len(tok.encode(" " + c)) == 1]
        fillers = tuple(letters) or words[:1]
        counts.update({c: 1 for c in letters})
    return WordPool(words, counts, fillers)


def draw_words(pool: WordPool, rng: np.random.Generator, n_tokens: int) -> list[str]:
    """Random words whose estimated token count just reaches n_tokens."""
    words: list[str] = []
    total = 0
    while total < n_tokens:
        batch = [pool.words[i] for i in rng.integers(0, len(pool.words), max(16, n_tokens - total))]
        for word in batch:
            if total >= n_tokens:
                break
            words.append(word)
            total += pool.counts[word]
    return words


def fit_words(
    words: list[str], n_tokens: int, pool: WordPool, tok: TokenizerAdapter, count: Callable[[str], int] | None = None
) -> tuple[str, int]:
    """Trim or extend the tail of `words` until the text counts n_tokens; returns (text, actual).

    `count` is the length of a text as the target sees it (default: its own tokens)."""
    count = count or (lambda text: len(tok.encode(text)))
    words = list(words)
    fill = 0
    for _ in range(FIT_ROUNDS):
        text = " ".join(words)
        actual = count(text)
        if actual == n_tokens:
            return text, actual
        deficit = n_tokens - actual
        if deficit < 0:
            removed = 0
            while words and removed < -deficit:
                removed += pool.counts.get(words.pop(), 1)
            deficit = removed + deficit
        for _ in range(deficit):
            words.append(pool.fillers[fill % len(pool.fillers)])
            fill += 1
    text = " ".join(words)
    return text, count(text)


def text_prompts(
    workload: Workload,
    tokenizer: Any,
    seed: int,
    block_tokens: int = BLOCK_TOKENS,
    count: Callable[[str], int] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """request_id -> text of exactly `input_tokens` tokens, and one line per request where that failed.

    `count` gives the length of a text as the target will see it, when that is more than the text's own
    tokens: a chat server wraps the text in its chat template, so the text is fitted until the templated
    prompt has `input_tokens` tokens (what the model prefills, and what the server's usage reports).
    A request that brings its own prompt text keeps it; a wrong length there is reported too.
    """
    tok = as_tokenizer(tokenizer)
    count = count or (lambda text: len(tok.encode(text)))
    overhead = count("")  # the chat template's own tokens (0 for a plain text)
    pool = word_pool(tok)
    blocks: dict[int, list[str]] = {}

    def block(hash_id: int) -> list[str]:
        if hash_id not in blocks:
            drawn = draw_words(pool, np.random.default_rng(block_seed(seed, hash_id)), block_tokens)
            blocks[hash_id] = fit_words(drawn, block_tokens, pool, tok)[0].split(" ")
        return blocks[hash_id]

    prompts: dict[str, str] = {}
    mismatches: list[str] = []
    history: dict[str, tuple[str, int, int]] = {}  # session -> (last prompt text, its answer length, its index)
    for index, request in enumerate(workload.requests):
        n = request.input_tokens
        if request.prompt_text is not None:
            text, actual = request.prompt_text, count(request.prompt_text)
        elif (
            request.session is not None
            and request.turn > 0
            and not request.branch
            and not request.fresh
            and request.session in history
        ):
            before, answer, parent = history[request.session]
            words = before.split(" ") + draw_words(pool, np.random.default_rng([seed, ANSWER_STREAM, parent]), answer)
            have = count(" ".join(words))
            words += draw_words(pool, np.random.default_rng(request_seed(seed, index)), max(1, n - have))
            text, actual = fit_words(words, n, pool, tok, count)
        else:
            content = max(1, n - overhead)
            hashes = request.prefix_hash_ids[: math.ceil(content / block_tokens)]
            words = [w for h in hashes for w in block(h)]
            have = len(hashes) * block_tokens
            if have < content:
                words += draw_words(pool, np.random.default_rng(request_seed(seed, index)), content - have)
            text, actual = fit_words(words, n, pool, tok, count)
        prompts[request.request_id] = text
        if request.session is not None and not request.branch:  # a sub-agent's prompt is no part of the history
            history[request.session] = (text, request.output_tokens, index)
        if actual != n:
            mismatches.append(f"{request.request_id}: asked for {n} tokens, the text encodes to {actual}")
    return prompts, mismatches
