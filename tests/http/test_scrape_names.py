"""The scrape's name maps: Prometheus text of vLLM, SGLang and TGI read into the same fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.http.scrape_names import ScrapeParseError, parse_prometheus, server_fields, spec_decode

VLLM = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
vllm:num_preemptions_total{model_name="m"} 4.0
vllm:prefix_cache_queries_total{model_name="m"} 1000.0
vllm:prefix_cache_hits_total{model_name="m"} 176.0
vllm:spec_decode_num_drafts_total{model_name="m"} 10.0
vllm:spec_decode_num_draft_tokens_total{model_name="m"} 30.0
vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 12.0
"""


def test_vllm_names_summed_over_label_sets():
    fields = server_fields(parse_prometheus(VLLM))
    assert fields["running"] == 5.0 and fields["waiting"] == 7.0
    assert fields["kv_usage"] == 0.25  # the pre-v0.10 name is still read
    assert fields["prefix_hits"] / fields["prefix_queries"] == pytest.approx(0.176)
    assert fields["preemptions"] == 4.0


def test_sglang_and_tgi_names():
    text = "sglang:num_running_reqs 2\nsglang:num_queue_reqs 9\nsglang:token_usage 0.5"
    sglang = server_fields(parse_prometheus(text))
    assert sglang == {"running": 2.0, "waiting": 9.0, "kv_usage": 0.5}
    tgi = server_fields(parse_prometheus("tgi_batch_current_size 4\ntgi_queue_size 1\n"))
    assert tgi == {"running": 4.0, "waiting": 1.0}  # TGI says nothing of KV use: absent, not 0


def test_sglang_names_in_a_real_sglang_metrics_text():
    """SGLang v0.5.10's /metrics as DataDog's integration tests it (tests/fixtures/sglang/SOURCE.md): the name map
    reads its running, queued and KV-use gauges, labelled by model and tp rank; it has no preemption counter and
    batchmark reads no prefix counter of it (`sglang:cached_tokens_total` is not mapped), so both are absent."""
    text = (Path(__file__).parent.parent / "fixtures" / "sglang" / "metrics-after-one-request.prom").read_text()
    assert server_fields(parse_prometheus(text)) == {"running": 0.0, "waiting": 0.0, "kv_usage": 0.25}


def test_tgi_names_in_a_real_tgi_metrics_text():
    """The head of a TGI /metrics text from DataDog's TGI integration tests (tests/fixtures/tgi/SOURCE.md): the name
    map reads its batch size and queue gauges; TGI exposes no KV-use, preemption or prefix gauge, so those are
    absent, not 0. The text's own request counters (111 requests, 2 refused) are not fields batchmark reads."""
    text = (Path(__file__).parent.parent / "fixtures" / "tgi" / "metrics-head.prom").read_text()
    samples = parse_prometheus(text)
    assert server_fields(samples) == {"running": 0.0, "waiting": 0.0}


def test_spec_decode_from_counter_deltas():
    start = server_fields(parse_prometheus(VLLM))
    end = dict(start, spec_drafts=20.0, spec_draft_tokens=60.0, spec_accepted_tokens=30.0)
    got = spec_decode(start, end)
    assert got is not None
    assert got["acceptance_rate"] == pytest.approx(18 / 30)  # (30 - 12) accepted of (60 - 30) drafted
    assert got["mean_acceptance_length"] == pytest.approx(1 + 18 / 10)
    assert spec_decode(start, start) is None  # no drafts in the window
    assert spec_decode({"running": 1.0}, {"running": 1.0}) is None  # not exposed: no figure, no default


def test_drafts_without_draft_tokens_count_as_vllm_counts_them():
    """vLLM counts a verify step whose scheduled placeholders the proposer left unfilled (async scheduling) as a
    draft of no draft token (harness/metrics/spec_decode.py cites the source): length 1 + accepted / drafts over
    those drafts, and no rate (no draft token), where the window used to give no figure at all."""
    start = server_fields(parse_prometheus(VLLM))
    end = dict(start, spec_drafts=14.0)  # 4 more drafts, no draft token, nothing accepted
    got = spec_decode(start, end)
    assert got is not None
    assert got["mean_acceptance_length"] == 1.0 and got["acceptance_rate"] is None


def test_malformed_line_names_its_line():
    with pytest.raises(ScrapeParseError, match="metrics line 2"):
        parse_prometheus('ok 1\nbroken{a="b"\n')
