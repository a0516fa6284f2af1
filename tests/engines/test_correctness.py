"""Every engine's greedy tokens equal an unbatched reference decode of the same prompt (fp32)."""

from __future__ import annotations

import pytest

from engines.inprocess import EngineOptions, KVConfig
from engines.scheduler import ContinuousConfig
from engines.static_scheduler import StaticConfig
from tests.engines.helpers import drive, mixed_requests, reference_greedy, run_engine


@pytest.fixture(scope="module")
def requests_and_reference(embedded):
    requests = mixed_requests(36, seed=7, vocab=embedded.model.config.vocab_size)
    reference = {
        r.request_id: reference_greedy(embedded.model, list(r.prompt_token_ids), r.max_tokens) for r in requests
    }
    return requests, reference


def assert_same_tokens(run, reference) -> None:
    mismatched = [rid for rid, tokens in reference.items() if run.tokens_by_request[rid] != tokens]
    assert not mismatched, f"{len(mismatched)} requests differ from the reference, e.g. {mismatched[:3]}"


def test_continuous_matches_reference(embedded, requests_and_reference):
    requests, reference = requests_and_reference
    options = EngineOptions(kind="continuous", continuous=ContinuousConfig(max_running=8, max_batched_tokens=128))
    run = run_engine(embedded, options, requests)
    assert_same_tokens(run, reference)
    # chunked prefill and mixed steps really happened, so the comparison covered them
    assert any(step["phase"] == "mixed" for step in run.steps)
    assert any(step["tokens_computed"] == 128 for step in run.steps)


def test_static_matches_reference(embedded, requests_and_reference):
    requests, reference = requests_and_reference
    run = run_engine(embedded, EngineOptions(kind="static", static=StaticConfig(max_batch=8)), requests)
    assert_same_tokens(run, reference)
    assert sum(step["padded_tokens"] for step in run.steps) > 0  # unequal prompts were padded


def test_continuous_matches_reference_under_preemption(embedded, requests_and_reference):
    requests, reference = requests_and_reference
    # 12 blocks of 16 tokens: a few sequences fit, growth forces preemption and recompute
    options = EngineOptions(
        kind="continuous",
        kv=KVConfig(block_size=16, blocks=12),
        continuous=ContinuousConfig(max_running=8, max_batched_tokens=256),
    )
    run = run_engine(embedded, options, requests)
    preempted = [rid for step in run.steps for rid in step["preempted"]]
    assert len(preempted) >= 3, "the tiny KV pool should have forced preemptions"
    assert_same_tokens(run, reference)
    assert max(step["kv_blocks_used"] for step in run.steps) <= 12


def test_torch_attention_path_matches_reference(embedded, requests_and_reference):
    """The pure-torch fallback (used when no C compiler exists) gives the same tokens."""
    from engines.inprocess import InProcessEngine

    requests, reference = requests_and_reference
    engine = InProcessEngine(embedded, EngineOptions(kind="continuous", continuous=ContinuousConfig(max_running=6)))
    engine.runner._native = None
    assert engine.runner.attention_backend == "torch gather + sdpa"
    run = drive(engine, requests[:12])
    assert_same_tokens(run, {r.request_id: reference[r.request_id] for r in requests[:12]})


def test_raw_loop_matches_reference(embedded):
    """The ceiling `bench engines` measures against computes the same greedy tokens (it shares the layer code)."""
    from engines.raw_loop import RawLoop

    requests = mixed_requests(6, seed=3, vocab=embedded.model.config.vocab_size, prompt=(24, 24))
    prompts = [list(r.prompt_token_ids) for r in requests]
    result = RawLoop(embedded.model).run(prompts, 12, batch_size=4)
    assert result.output_tokens == 6 * 12 and result.steps == 2 * 12
    assert result.tokens == [reference_greedy(embedded.model, prompt, 12) for prompt in prompts]
