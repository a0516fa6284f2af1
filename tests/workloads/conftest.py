"""Fixtures for the workloads tests: tiny tokenizers built here (nothing is downloaded) and trace writers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SYLLABLES = ["ka", "to", "ri", "men", "sa", "lo", "ve", "qu", "est", "ion", "bar", "ze", "nu", "pi", "dor"]


def made_up_words(n: int = 400, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return sorted({"".join(rng.choice(SYLLABLES, rng.integers(1, 4))) for _ in range(n)})


@pytest.fixture(scope="session")
def bpe_tokenizer() -> Tokenizer:
    """A byte-level BPE (GPT-2 style) with 400 ids, trained on made-up words; ids 0 and 1 are special."""
    rng = np.random.default_rng(1)
    words = made_up_words()
    lines = [" ".join(rng.choice(words, 12)) for _ in range(300)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<s>", "</s>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(lines, trainer)
    return tok


@pytest.fixture(scope="session")
def word_tokenizer() -> Tokenizer:
    """A word-level tokenizer: one id per made-up word, [UNK] = 0."""
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(made_up_words())}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(["[UNK]"])
    return tok


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """write(name, text) -> path of a file with that text in a fresh temporary folder."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return _write
