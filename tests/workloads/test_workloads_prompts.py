"""Prompts of exact token counts: token ids for in-process engines, verified text for HTTP targets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from workloads import (
    Workload,
    WorkloadError,
    WorkloadRequest,
    as_tokenizer,
    load_workload,
    text_prompts,
    token_id_prompts,
)


def workload_of(*lengths: int, hashes: tuple[tuple[int, ...], ...] = ()) -> Workload:
    requests = [
        WorkloadRequest(f"r{i:06d}", float(i), n, 4, prefix_hash_ids=hashes[i] if hashes else ())
        for i, n in enumerate(lengths)
    ]
    return Workload("test", requests, {"seed": 0}, [])


def encoded(tok: Tokenizer, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False).ids


def test_token_ids_have_exact_lengths_and_avoid_special_ids() -> None:
    w = load_workload("chat-small")
    prompts = token_id_prompts(w, vocab_size=50, seed=3, avoid_ids={0, 1, 2})
    assert list(prompts) == [r.request_id for r in w.requests]
    assert [len(p) for p in prompts.values()] == [r.input_tokens for r in w.requests]
    used = {i for p in prompts.values() for i in p}
    assert used <= set(range(3, 50)) and len(used) == 47  # every allowed id shows up, no special one
    assert token_id_prompts(w, 50, 3, {0, 1, 2}) == prompts
    assert token_id_prompts(w, 50, 4, {0, 1, 2}) != prompts


def test_token_ids_share_prefix_blocks_like_mooncake() -> None:
    w = load_workload("mooncake-conv", first=3)
    assert [r.prefix_hash_ids[0] for r in w.requests] == [0, 0, 0]  # three turns open with block 0
    prompts = [token_id_prompts(w, 32_000, seed=1)[r.request_id] for r in w.requests]
    assert [len(p) for p in prompts] == [r.input_tokens for r in w.requests]
    assert prompts[0][:512] == prompts[1][:512] == prompts[2][:512]
    assert prompts[0][512:1024] != prompts[1][512:1024]  # hash ids 1 and 14 differ


def test_identical_hash_ids_give_identical_blocks_and_the_last_block_is_cut() -> None:
    w = workload_of(1100, 600, 700, hashes=((5, 6, 7), (9, 6), (5, 6)))
    p = token_id_prompts(w, 1000, seed=0)
    assert p["r000000"][:700] == p["r000002"]  # same two blocks, cut at 700 tokens
    assert p["r000000"][512:600] == p["r000001"][512:600]  # block 6 in second place in both
    assert len(p["r000000"]) == 1100


def test_every_id_avoided_is_an_error() -> None:
    with pytest.raises(WorkloadError, match="no token ids left"):
        token_id_prompts(workload_of(5), vocab_size=3, seed=0, avoid_ids=[0, 1, 2])


def test_text_prompts_tokenize_back_exactly_with_a_bpe(bpe_tokenizer: Tokenizer) -> None:
    w = load_workload("chat-mix")
    prompts, mismatches = text_prompts(w, bpe_tokenizer, seed=0)
    assert mismatches == []
    for r in w.requests:
        assert len(encoded(bpe_tokenizer, prompts[r.request_id])) == r.input_tokens
    assert text_prompts(w, bpe_tokenizer, seed=0)[0] == prompts
    assert text_prompts(w, bpe_tokenizer, seed=1)[0] != prompts


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 700), min_size=1, max_size=4), st.integers(0, 2**32))
def test_text_prompt_lengths_property(bpe_tokenizer: Tokenizer, lengths: list[int], seed: int) -> None:
    prompts, mismatches = text_prompts(workload_of(*lengths), bpe_tokenizer, seed)
    assert mismatches == []
    assert [len(encoded(bpe_tokenizer, t)) for t in prompts.values()] == lengths


def test_text_prompts_with_a_word_level_tokenizer(word_tokenizer: Tokenizer) -> None:
    prompts, mismatches = text_prompts(workload_of(1, 17, 300), word_tokenizer, seed=2)
    assert mismatches == []
    assert [len(encoded(word_tokenizer, t)) for t in prompts.values()] == [1, 17, 300]
    assert "[UNK]" not in " ".join(prompts.values())


def test_transformers_tokenizer_gives_the_same_text(bpe_tokenizer: Tokenizer) -> None:
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_object=bpe_tokenizer, bos_token="<s>", eos_token="</s>")
    adapter = as_tokenizer(hf)
    assert adapter.vocab_size == 400 and adapter.special_ids == {0, 1}
    w = workload_of(3, 64, 250)
    assert text_prompts(w, hf, seed=0) == text_prompts(w, bpe_tokenizer, seed=0)
    assert as_tokenizer(bpe_tokenizer).special_ids == {0, 1}


def test_text_prompts_share_prefix_blocks(bpe_tokenizer: Tokenizer) -> None:
    w = load_workload("mooncake-conv", first=3, max_context=1500)
    prompts, mismatches = text_prompts(w, bpe_tokenizer, seed=0)
    assert mismatches == []
    ids = [encoded(bpe_tokenizer, prompts[r.request_id]) for r in w.requests]
    assert [len(i) for i in ids] == [r.input_tokens for r in w.requests]
    assert ids[0][:500] == ids[1][:500] == ids[2][:500]  # block 0, shared (a word may straddle 512)
    assert ids[0][600:900] != ids[1][600:900]


class TwoTokenWords:
    """Every word is two tokens, so an odd count cannot be reached: the builder must say so."""

    vocab_size = 10

    def encode(self, text: str) -> list[int]:
        return [3, 4] * len(text.split())

    def decode(self, ids: list[int]) -> str:
        return "ab"


def test_unreachable_lengths_are_reported_not_hidden() -> None:
    prompts, mismatches = text_prompts(workload_of(4, 5), TwoTokenWords(), seed=0)
    assert len(TwoTokenWords().encode(prompts["r000000"])) == 4
    assert len(mismatches) == 1
    assert mismatches[0].startswith("r000001: asked for 5 tokens, the text encodes to ")


def test_prompt_text_from_a_trace_is_kept_and_checked(
    write: Callable[[str, str], Path], word_tokenizer: Tokenizer
) -> None:
    path = write("t.csv", "arrival_s,input_tokens,output_tokens,prompt_text\n0,2,5,kato rimen\n1,3,5,kato rimen\n")
    prompts, mismatches = text_prompts(load_workload(str(path)), word_tokenizer, seed=0)
    assert prompts == {"r000000": "kato rimen", "r000001": "kato rimen"}
    assert mismatches == ["r000001: asked for 3 tokens, the text encodes to 2"]
