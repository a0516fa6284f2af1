"""The workload field `reasoning_tokens`: a tenant's distribution, a trace's column, the preset, the fingerprint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from workloads import WorkloadError, load_workload, read_trace
from workloads.frame import from_requests, to_requests

Write = Callable[[str, str], Path]
SPEC = """requests = 40
[[tenants]]
name = "think"
rate = 4.0
input = 32
output = {{ dist = "uniform", low = 8, high = 64 }}
{extra}
"""


def test_a_tenant_draws_reasoning_after_its_lengths_so_they_do_not_change(write: Write) -> None:
    plain = load_workload(str(write("plain.toml", SPEC.format(extra=""))))
    thinking = load_workload(
        str(write("think.toml", SPEC.format(extra='reasoning_tokens = { dist = "uniform", low = 4, high = 48 }')))
    )
    assert [(r.arrival_s, r.output_tokens) for r in plain.requests] == [
        (r.arrival_s, r.output_tokens) for r in thinking.requests
    ]
    assert all(r.reasoning_tokens == 0 for r in plain.requests)
    assert all(4 <= r.reasoning_tokens <= 48 for r in thinking.requests)
    assert plain.fingerprint() != thinking.fingerprint()
    assert thinking.spec["source"]["tenants"][0]["reasoning_tokens"] == {"dist": "uniform", "low": 4, "high": 48}
    assert "reasoning_tokens" not in plain.spec["source"]["tenants"][0]  # older specs and fingerprints stay
    assert to_requests(from_requests(thinking.requests)) == thinking.requests  # transforms keep the field


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("reasoning_tokens = -3", r"bad.toml:7: tenants\[0\].reasoning_tokens.value: expected an integer >= 0"),
        ("reasoning_tokens = nan", r"bad.toml:7: tenants\[0\].reasoning_tokens: expected a token count"),
        ('reasoning_tokens = { dist = "uniform", low = -1, high = 4 }', r"reasoning_tokens.low: expected an integer"),
        (
            'reasoning_tokens = { dist = "normal", mean = nan, std = 1 }',
            r"reasoning_tokens.mean: expected a number > 0, found nan",
        ),
        ('reasoning_tokens = { dist = "uniform", low = 5, high = 0 }', r"reasoning_tokens.high: high \(0\) is below"),
    ],
)
def test_a_bad_reasoning_distribution_names_its_line(write: Write, extra: str, said: str) -> None:
    path = write("bad.toml", SPEC.format(extra=extra))
    with pytest.raises(WorkloadError, match=said):
        load_workload(str(path))


@pytest.mark.parametrize(
    "extra",
    [
        'reasoning_tokens = { dist = "uniform", low = 0, high = 8 }',
        'reasoning_tokens = { dist = "mixture", components = [{ weight = 1, dist = "fixed", value = 0 }, '
        '{ weight = 1, dist = "fixed", value = 6 }] }',
        'reasoning_tokens = { dist = "normal", mean = 2, std = 4, min = 0 }',
    ],
)
def test_one_tenant_mixes_plain_and_reasoning_requests(write: Write, extra: str) -> None:
    """0 reasoning tokens is a plain request: a tenant's distribution may draw it (it drew at least 1 before)."""
    w = load_workload(str(write("mix.toml", SPEC.format(extra=extra))))
    drawn = [r.reasoning_tokens for r in w.requests]
    assert min(drawn) == 0 and max(drawn) > 0 and all(x >= 0 for x in drawn)
    assert (
        load_workload(str(write("zero.toml", SPEC.format(extra="reasoning_tokens = 0")))).requests[0].reasoning_tokens
        == 0
    )


def test_a_canonical_trace_carries_reasoning_per_request(write: Write) -> None:
    path = write("r.csv", "arrival_s,input_tokens,output_tokens,reasoning_tokens\n0,10,8,3\n1,10,4,0\n")
    assert read_trace(path).frame["reasoning_tokens"].tolist() == [3, 0]
    bad = write("rb.csv", "arrival_s,input_tokens,output_tokens,reasoning_tokens\n0,10,8,-1\n")
    with pytest.raises(WorkloadError, match=r"rb.csv:2: reasoning_tokens: negative token count"):
        read_trace(bad)


def test_the_preset_has_requests_that_spend_all_their_tokens_reasoning() -> None:
    w = load_workload("reasoning-chat")
    described = w.describe()
    assert described["reasoning_exhausts"] == sum(r.reasoning_tokens >= r.output_tokens for r in w.requests) > 0
    assert "reasoning_tokens" not in load_workload("chat-small").describe()
