"""Synthetic presets and tenants: each hard preset really has the property it is named for."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engines.static_scheduler import StaticConfig
from workloads import list_presets, load_workload

SYNTHETIC = [
    "burst",
    "chat-mix",
    "chat-small",
    "closed-loop-small",
    "hol-blocking",
    "kv-pressure",
    "noisy-neighbour",
    "prefill-storm",
    "reasoning-chat",
    "step-profile",
    "step-profile-cover",
    "step-profile-cover-2",
    "step-profile-cover-3",
    "step-profile-long",
    "step-profile-wide",
]


def test_preset_list() -> None:
    sessions = ["agentic", "agentic-fanout", "multi-turn-chat", "weka-agentic", "weka-agentic-all"]
    traces = ["azure-code", "azure-conv", "mooncake-conv", "mooncake-synthetic"]
    assert list_presets() == sorted([*traces, *SYNTHETIC, *sessions])


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_presets_are_valid_and_deterministic(name: str) -> None:
    a, b = load_workload(name), load_workload(name)
    assert a.requests == b.requests and a.fingerprint() == b.fingerprint()
    arrivals = [r.arrival_s for r in a.requests]
    assert arrivals == sorted(arrivals) and arrivals[0] >= 0
    assert [r.request_id for r in a.requests] == [f"r{i:06d}" for i in range(len(a.requests))]
    assert all(r.input_tokens >= 1 and r.output_tokens >= 1 for r in a.requests)


def test_chat_small_is_sized_for_a_tiny_model() -> None:
    w = load_workload("chat-small")
    n_in = np.array([r.input_tokens for r in w.requests])
    n_out = np.array([r.output_tokens for r in w.requests])
    assert len(w.requests) == 64
    assert 56 <= n_in.mean() <= 72 and n_out.min() >= 8 and n_out.max() <= 128


def test_step_profile_spans_the_step_shapes_a_fit_needs() -> None:
    w = load_workload("step-profile")
    n_in = np.array([r.input_tokens for r in w.requests])
    arrivals = np.array([r.arrival_s for r in w.requests])
    assert n_in.min() < 32 and n_in.max() > 1024  # prefill from a few tokens to long prompts
    assert ((arrivals >= 12.0) & (arrivals < 12.5)).sum() >= 32  # a burst that fills 32 slots


def test_step_profile_long_reaches_long_contexts_one_at_a_time() -> None:
    w = load_workload("step-profile-long")
    long = sorted((r.arrival_s, r.input_tokens + r.output_tokens) for r in w.requests if r.tenant == "long-context")
    assert len(long) == 5 and all(2048 <= total <= 8192 + 32 for _, total in long)
    assert max(total for _, total in long) > 6000  # chunks over 6k of earlier context: the chunk x context term
    assert all(b[0] - a[0] >= 5.0 for a, b in itertools.pairwise(long))  # never two in one static batch
    assert {r.tenant for r in w.requests} >= {"short", "long", "burst"}  # step-profile's shapes are kept


def test_step_profile_wide_decodes_long_outputs_at_long_contexts() -> None:
    w = load_workload("step-profile-wide")
    wide = [r for r in w.requests if r.tenant.startswith("long-decode")]
    assert len(wide) == 9 and all(r.input_tokens >= 768 and r.output_tokens >= 128 for r in wide)
    assert sum(r.output_tokens for r in wide) >= 2000  # decode steps at 768..4,400 tokens of context
    assert sum(r.input_tokens >= 2048 for r in wide) >= 3  # static batches padded to 2,048+ tokens
    alone = [r for r in wide if r.tenant == "long-decode-alone"]
    assert min(r.arrival_s for r in alone) > max(r.arrival_s for r in w.requests if r.tenant == "short")
    assert {r.tenant for r in w.requests} >= {"short", "long", "burst"}  # step-profile's shapes are kept


def test_step_profile_cover_samples_long_outputs_and_lone_long_prompts_before_step_profile_wide() -> None:
    w = load_workload("step-profile-cover")
    decode = [r for r in w.requests if r.tenant.startswith("cover-decode")]
    assert len(decode) == 10 and all(r.input_tokens <= 128 and r.output_tokens >= 900 for r in decode)
    alone = sorted(r.arrival_s for r in decode if r.tenant == "cover-decode-alone")
    assert all(b - a >= 5.0 for a, b in itertools.pairwise(alone))  # one 1,000-token output done before the next
    prefill = sorted((r.arrival_s, r.input_tokens) for r in w.requests if r.tenant == "cover-prefill-alone")
    assert len(prefill) == 24 and all(512 <= n <= 2048 for _, n in prefill)
    assert all(b[0] - a[0] >= 1.0 for a, b in itertools.pairwise(prefill))  # each a static batch of one
    wide = load_workload("step-profile-wide")
    first_wide = min(r.arrival_s for r in w.requests if not r.tenant.startswith("cover"))
    assert first_wide > max(t for t, _ in prefill)  # step-profile-wide's traffic after the covering part
    assert {r.tenant for r in w.requests} >= {r.tenant for r in wide.requests}


@pytest.mark.parametrize("seed", [0, 7])
def test_step_profile_cover_2_adds_padded_prefill_bursts_of_2_and_4_after_step_profile_cover(seed: int) -> None:
    cover, w = load_workload("step-profile-cover", seed=seed), load_workload("step-profile-cover-2", seed=seed)
    added = [r for r in w.requests if r.tenant.startswith("cover-pad")]
    kept = [r for r in w.requests if not r.tenant.startswith("cover-pad")]
    drawn = [(r.arrival_s, r.tenant, r.input_tokens, r.output_tokens) for r in kept]
    assert drawn == [(r.arrival_s, r.tenant, r.input_tokens, r.output_tokens) for r in cover.requests]  # unchanged
    assert min(r.arrival_s for r in added) > max(r.arrival_s for r in cover.requests)  # after its traffic
    assert min(r.arrival_s for r in added) >= 150.0  # and after the static engine's backlog of it (to 120-147 s)
    window = StaticConfig().batch_timeout_s  # the static engine batches what arrives within it of the first
    bursts: list[list] = []
    for r in added:
        if bursts and r.arrival_s - bursts[-1][0].arrival_s < window:
            bursts[-1].append(r)
        else:
            bursts.append([r])
    assert sorted(len(b) for b in bursts) == [2] * 12 + [4] * 12
    for burst in bursts:
        long = [r.input_tokens for r in burst if r.input_tokens >= 1024]
        assert len(long) == 1 and long[0] <= 2047  # one long prompt ...
        assert all(16 <= r.input_tokens <= 128 for r in burst if r.input_tokens < 1024)  # ... padded with short ones
        assert all(8 <= r.output_tokens <= 24 for r in burst)
        padded = len(burst) * long[0]  # `prefill:12:0` for 2 rows, `prefill:13:0` for 4 (engines/sim/shape_speed.py)
        assert padded.bit_length() == {2: 12, 4: 13}[len(burst)]
    starts = [b[0].arrival_s for b in bursts]
    assert all(b - a >= 1.25 - 1e-9 for a, b in itertools.pairwise(starts))  # each batch's prefill alone


@pytest.mark.parametrize("seed", [0, 7])
def test_step_profile_cover_3_adds_a_grid_of_long_padded_prefills_and_batched_decode_after_cover_2(seed: int) -> None:
    cover2, w = load_workload("step-profile-cover-2", seed=seed), load_workload("step-profile-cover-3", seed=seed)
    old = {r.tenant for r in cover2.requests}
    kept = [(r.arrival_s, r.tenant, r.input_tokens, r.output_tokens) for r in w.requests if r.tenant in old]
    assert kept == [(r.arrival_s, r.tenant, r.input_tokens, r.output_tokens) for r in cover2.requests]  # unchanged
    added = [r for r in w.requests if r.tenant not in old]
    last = max(r.arrival_s for r in cover2.requests)
    assert last == pytest.approx(187.505)  # cover-2's last burst
    assert min(r.arrival_s for r in added) == pytest.approx(190.0)  # after it, its batch done
    window = StaticConfig().batch_timeout_s  # the static engine batches what arrives within it of the first
    bursts: list[list] = []
    for r in sorted(added, key=lambda r: r.arrival_s):
        if bursts and r.arrival_s - bursts[-1][0].arrival_s < window:
            bursts[-1].append(r)
        else:
            bursts.append([r])
    assert [len(b) for b in bursts] == [6] * 5 + [8] * 5 + [rows for _ in range(4) for rows in range(3, 9)]
    starts = [b[0].arrival_s for b in bursts]
    assert starts[:10] == pytest.approx([190.0 + 3.2 * k for k in range(5)] + [206.0 + 3.2 * k for k in range(5)])
    assert starts[10] == pytest.approx(222.0) and max(starts) == pytest.approx(272.5)
    assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(starts))  # each batch done before the next
    for burst, (low, high) in zip(bursts[:10], [(1400, 1700)] * 5 + [(1040, 1270)] * 5, strict=True):
        long = [r.input_tokens for r in burst if r.input_tokens >= 1024]
        assert len(long) == 1 and low <= long[0] <= high  # one long prompt ...
        assert all(16 <= r.input_tokens <= 128 for r in burst if r.input_tokens < 1024)  # ... padded with short ones
        assert all(8 <= r.output_tokens <= 24 for r in burst)
        assert (len(burst) * long[0]).bit_length() == 14  # `prefill:14:0` (engines/sim/shape_speed.py)
    outputs = {1: (24, 32), 2: (32, 40), 3: (40, 48), 4: (48, 56)}
    for k, burst in enumerate(bursts[10:]):
        band, rows = 1 + k // 6, 3 + k % 6
        assert len(burst) == rows
        assert all(band * 256 + 16 <= r.input_tokens <= band * 256 + 176 for r in burst)
        assert all(outputs[band][0] <= r.output_tokens <= outputs[band][1] for r in burst)
        # every row stays in its 256-key band to its last token: `decode:ROWS:BAND`
        assert all((r.input_tokens + r.output_tokens) // 256 == band for r in burst)


def test_hol_blocking_has_rare_very_long_outputs() -> None:
    out = np.array([r.output_tokens for r in load_workload("hol-blocking", duration_s=2000.0).requests])
    long = out == 1024
    assert long.mean() == pytest.approx(0.03, abs=0.008)
    assert out[~long].max() <= 32


def test_noisy_neighbour_sends_half_the_load_beside_nine_light_tenants() -> None:
    w = load_workload("noisy-neighbour", duration_s=1200.0)
    tenants = w.describe()["tenants"]
    assert sorted(tenants) == sorted(["noisy", *(f"light-{i}" for i in range(1, 10))])
    noisy = [r for r in w.requests if r.tenant == "noisy"]
    assert len(noisy) / len(w.requests) == pytest.approx(0.5, abs=0.03)
    light_out = [r.output_tokens for r in w.requests if r.tenant != "noisy"]
    assert min(r.output_tokens for r in noisy) >= 512 and max(light_out) <= 64


def test_kv_pressure_has_long_prompts_that_fit_2048() -> None:
    w = load_workload("kv-pressure")
    n_in = np.array([r.input_tokens for r in w.requests])
    total = n_in + np.array([r.output_tokens for r in w.requests])
    assert np.median(n_in) > 900 and total.max() <= 2048


def test_prefill_storm_lands_24_long_prompts_within_half_a_second() -> None:
    w = load_workload("prefill-storm")
    storm = [r for r in w.requests if r.tenant == "storm"]
    assert len(storm) == 24
    assert min(r.arrival_s for r in storm) == 10.0 and max(r.arrival_s for r in storm) < 10.5
    assert min(r.input_tokens for r in storm) >= 1024
    assert any(r.tenant == "chat" and r.arrival_s < 10 for r in w.requests)  # background traffic first


def test_tenant_streams_are_independent(write: Callable[[str, str], Path]) -> None:
    one = write("one.toml", 'duration_s = 30.0\n[[tenants]]\nname = "a"\nrate = 2.0\ninput = 10\noutput = 5\n')
    two = write(
        "two.toml",
        'duration_s = 30.0\n[[tenants]]\nname = "a"\nrate = 2.0\ninput = 10\noutput = 5\n'
        '[[tenants]]\nname = "b"\nrate = 1.0\npriority = 3\ninput = 20\noutput = 9\n',
    )
    a_alone = [r.arrival_s for r in load_workload(str(one)).requests]
    both = load_workload(str(two))
    assert [r.arrival_s for r in both.requests if r.tenant == "a"] == a_alone  # adding b leaves a as it was
    assert {r.priority for r in both.requests if r.tenant == "b"} == {3}


def test_requests_and_duration_override_what_is_generated() -> None:
    assert len(load_workload("chat-small", requests=300).requests) == 300
    w = load_workload("hol-blocking", duration_s=10.0)
    assert max(r.arrival_s for r in w.requests) < 10.0
    assert w.spec["source"]["duration_s"] == 10.0 and w.spec["transforms"] == []


def test_tenants_do_not_all_start_with_a_request_at_t0() -> None:
    # Ten tenants once each sent a request at t = 0, so 20 requests of a "4 req/s" preset came at 16.7 req/s.
    rates = []
    for seed in range(20):
        w = load_workload("noisy-neighbour", requests=20, seed=seed)
        arrivals = np.array([r.arrival_s for r in w.requests])
        assert arrivals[0] == 0.0 and np.sum(arrivals == 0.0) == 1  # it starts with traffic, one request of it
        rates.append((len(arrivals) - 1) / arrivals[-1])
    assert 3.0 <= float(np.median(rates)) <= 5.5


def test_a_tenant_that_switches_on_later_keeps_its_start_and_one_tenant_is_unchanged() -> None:
    from workloads.arrivals import ArrivalProcess, arrival_times
    from workloads.lengths import parse_length
    from workloads.synthetic import TENANT_STREAM, TenantSpec, generate_open, phases

    storm = sorted(r.arrival_s for r in load_workload("prefill-storm").requests if r.tenant == "storm")
    assert storm[0] == 10.0 and storm[-1] < 10.5
    length = parse_length({"dist": "fixed", "value": 8}, "input")
    one = TenantSpec("solo", 3.0, length, length)
    assert phases([one], 7) == [0.0]
    expected = arrival_times(ArrivalProcess(), 3.0, np.random.default_rng([7, TENANT_STREAM]), count=30)
    assert generate_open([one], 7, 30, None)["arrival_s"].tolist() == expected.tolist()
