"""Prefill/decode disaggregation in simulation (engines/sim/disagg.py): pools, KV transfer, the TTFT split."""

from __future__ import annotations

import pytest

from engines.api import Request
from harness.engine_specs import build_engine, parse_engine_specs
from harness.errors import user_errors
from harness.loadgen import Scheduled
from harness.loadgen.virtual import run_virtual_open_loop
from harness.records import RequestRecord

SIM = "sim:model=llama-3.1-8b,hardware=h100"


def run(text: str, schedule: list[Scheduled]) -> tuple[list[RequestRecord], object]:
    (spec,) = parse_engine_specs([text], {})
    engine = build_engine(spec, None)
    records: list[RequestRecord] = []
    run_virtual_open_loop(engine, schedule, records.append, label="e")
    return sorted(records, key=lambda r: r.request_id), engine


SCHEDULE = [
    Scheduled(Request(f"r{i:02d}", list(range(i * 1000, i * 1000 + 100 + 37 * i)), 8 + i, ignore_eos=True), i * 0.01)
    for i in range(24)
]


def test_an_instant_link_gives_a_colocated_engines_tokens_and_the_split_adds_up_to_ttft() -> None:
    colocated, _ = run(SIM, SCHEDULE)
    split, engine = run(f"disagg:prefill=1,decode=1,bandwidth_gbps=inf,latency_us=0,replica={SIM}", SCHEDULE)
    assert [(r.request_id, r.output_tokens, r.engine_prompt_tokens) for r in split] == [
        (r.request_id, r.output_tokens, r.engine_prompt_tokens) for r in colocated
    ]
    for r in split:
        assert r.error_type is None and r.t_kv_arrived == r.t_prefill_end  # nothing to wait for on the link
        parts = [
            r.t_admitted - r.t_sent,
            r.t_prefill_end - r.t_admitted,
            r.t_kv_arrived - r.t_prefill_end,
            r.t_first_token - r.t_kv_arrived,
        ]  # type: ignore[operator]
        assert all(p >= 0 for p in parts)
        assert sum(parts) == pytest.approx(r.t_first_token - r.t_sent, abs=1e-12)  # type: ignore[operator]
        assert r.cached_tokens == 0  # the transferred KV is not a prefix cache hit
    assert engine.describe()["disagg"]["kv_landed"] == len(SCHEDULE)  # type: ignore[attr-defined]


def test_a_slow_link_adds_the_kv_bytes_over_the_bandwidth() -> None:
    records, engine = run(f"disagg:link=measured,latency_us=100,replica={SIM}", SCHEDULE[:4])
    per_token = engine.kv_bytes_per_token  # type: ignore[attr-defined]
    assert per_token == 2 * 32 * 8 * 128 * 2  # llama-3.1-8b: 32 layers, 8 KV heads, head_dim 128, bf16
    for r in records:
        want = r.prompt_tokens * per_token / (167e6 / 38.7e-3) + 100e-6
        assert r.t_kv_arrived - r.t_prefill_end == pytest.approx(want)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (f"disagg:bandwidth_gbps=0,replica={SIM}", "bandwidth_gbps"),
        (f"disagg:bandwidth_gbps=nan,replica={SIM}", "bandwidth_gbps"),
        (f"disagg:prefill=0,replica={SIM}", "prefill"),
        (f"disagg:link=carrier-pigeon,replica={SIM}", "carrier-pigeon"),
        ("disagg:decode_hardware=l40s,replica=sim:model=llama-3.1-70b,hardware=h100,tp=2", "decode pool (l40s)"),
    ],
)
def test_bad_disagg_specs_name_the_field(text: str, named: str) -> None:
    with pytest.raises(user_errors()) as caught:
        parse_engine_specs([text], {})
    assert named in str(caught.value) and "\n" not in str(caught.value)
