"""The embedded tokenizer without transformers (engines/model/fast_tokenizer.py) answers as transformers'
AutoTokenizer does on the same files: ids, text, special tokens, vocabulary, and what serve and the prompt
builders make of them (chat prompts, streamed text, the workloads' adapter)."""

from __future__ import annotations

import pytest

from engines.model.embedded import TOKENIZER_DIR
from engines.model.fast_tokenizer import FastTokenizer
from engines.serve.chat import chat_prompt_ids
from engines.serve.detokenize import IncrementalDetokenizer
from workloads.tokenizer import as_tokenizer

TEXTS = [
    "",
    " ",
    "Hello, world!",
    "def f(x):\n    return x ** 2  # squares\n",
    "  leading and trailing spaces  ",
    "tabs\tand\r\nnewlines\n\n\n",
    "naïve café, Ünïcödé: 日本語のテキスト 😀👍🏽",
    "<|begin_of_text|>special<|end_of_text|> in the middle <|pad|>",
    "<|assistant|>\nnot a special token\n",
    "numbers 1234567890 3.14159 -42 1e-9",
    "a" * 300,
    "\x00\x01 control \x7f bytes",
]


@pytest.fixture(scope="module")
def pair():
    from transformers import AutoTokenizer

    return FastTokenizer(TOKENIZER_DIR), AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)


@pytest.mark.parametrize("special", [True, False], ids=["with-special", "without-special"])
def test_same_ids(pair, special: bool) -> None:
    ours, theirs = pair
    for text in TEXTS:
        expected = theirs(text, add_special_tokens=special)["input_ids"]
        assert ours(text, add_special_tokens=special)["input_ids"] == expected, text
        assert ours.encode(text, add_special_tokens=special) == theirs.encode(text, add_special_tokens=special)


@pytest.mark.parametrize("skip", [True, False], ids=["skip-special", "keep-special"])
def test_same_text(pair, skip: bool) -> None:
    ours, theirs = pair
    for text in TEXTS:
        ids = theirs.encode(text, add_special_tokens=False)
        assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip), text
    mixed = [0, 500, 1, 7000, 2, 2, 8191]
    assert ours.decode(mixed, skip_special_tokens=skip) == theirs.decode(mixed, skip_special_tokens=skip)
    assert ours.decode(1500) == theirs.decode(1500)


def test_same_special_tokens_and_vocabulary(pair) -> None:
    ours, theirs = pair
    for name in ("bos_token", "eos_token", "pad_token", "bos_token_id", "eos_token_id", "pad_token_id"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert sorted(ours.all_special_ids) == sorted(theirs.all_special_ids)
    assert (len(ours), ours.vocab_size) == (len(theirs), theirs.vocab_size)
    assert ours.get_vocab() == theirs.get_vocab()
    ids = [0, 1, 2, 3, 255, 4000, 8191]
    assert ours.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
    assert ours.convert_ids_to_tokens(42) == theirs.convert_ids_to_tokens(42)
    assert ours.chat_template is None and not getattr(theirs, "chat_template", None)


def test_serve_and_workloads_see_the_same_tokenizer(pair) -> None:
    ours, theirs = pair
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "naïve 😀 question?"}]
    assert chat_prompt_ids(ours, messages) == chat_prompt_ids(theirs, messages)
    ids = theirs.encode("streamed: naïve café 😀👍🏽 日本語 done", add_special_tokens=False)
    a, b = IncrementalDetokenizer(ours), IncrementalDetokenizer(theirs)
    assert [a.step(i) for i in ids] + [a.flush()] == [b.step(i) for i in ids] + [b.flush()]
    adapted = as_tokenizer(ours), as_tokenizer(theirs)
    assert adapted[0].vocab_size == adapted[1].vocab_size and adapted[0].special_ids == adapted[1].special_ids
    assert adapted[0].encode(TEXTS[6]) == adapted[1].encode(TEXTS[6])
    assert adapted[0].decode(ids) == adapted[1].decode(ids)


def test_saved_copy_loads_in_transformers(pair, tmp_path) -> None:
    from transformers import AutoTokenizer

    ours, theirs = pair
    ours.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    assert [again.encode(t) for t in TEXTS] == [theirs.encode(t) for t in TEXTS]
