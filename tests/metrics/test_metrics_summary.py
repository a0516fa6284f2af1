import json

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.metrics import (
    SLO,
    SUMMARY_SCHEMA_VERSION,
    goodput,
    jsonable,
    load_records,
    records_frame,
    steps_frame,
    summarize,
    summarize_by_engine,
    summary_table,
)
from tests.fixtures.records import make_record


def _run(engine: str, slow: float) -> list[dict]:
    rng = np.random.default_rng(0)
    recs = []
    for i in range(60):
        n = int(rng.integers(1, 8))
        recs.append(
            make_record(
                f"r{i}",
                engine=engine,
                tenant=f"t{i % 3}",
                t_scheduled=0.1 * i,
                t_sent=0.1 * i + 0.0005,
                t_admitted=0.1 * i + slow,
                ttft=slow + 0.05,
                gaps=[0.02 * (1 + slow)] * (n - 1),
            )
        )
    recs.append(
        make_record(
            "bad",
            engine=engine,
            t_scheduled=3.0,
            t_first_token=None,
            t_finish=None,
            token_times=[],
            output_tokens=0,
            error_type="http_status",
            finish_reason="error",
        )
    )
    return recs


def _steps() -> list[dict]:
    return [
        {
            "step": i,
            "t_start": 0.1 * i,
            "t_end": 0.1 * (i + 1),
            "phase": "decode",
            "num_running": 2,
            "max_slots": 4,
            "tokens_computed": 2,
            "idle_slots": 2,
            "kv_blocks_used": 5,
            "kv_blocks_total": 10,
        }
        for i in range(70)
    ]


@pytest.fixture(scope="module")
def both():
    return records_frame(_run("static", 0.3) + _run("continuous", 0.0))


def test_summary_is_strict_json_with_schema_version(both) -> None:
    static = both[both["engine"] == "static"]
    s = summarize(static, steps_frame(_steps()), slo=SLO(ttft_s=0.2, tpot_s=0.05), n_boot=200)
    text = json.dumps(s, allow_nan=False)  # raises on NaN / inf
    assert json.loads(text) == s
    assert s["schema_version"] == SUMMARY_SCHEMA_VERSION
    assert s["engine"] == "static" and s["trial"] == 0
    assert s["requests"] == {
        "total": 61,
        "succeeded": 60,
        "failed": 1,
        "failures_by_type": {"http_status": 1},
        "finish_reasons": {"error": 1, "length": 60},
        "output_tokens": s["requests"]["output_tokens"],
        "prompt_tokens": 610,
        "preemptions": 0,
    }
    assert set(s["latency"]) >= {"ttft", "ttft_sent", "tpot", "itl", "e2e", "e2e_sent", "queue_delay"}
    # TTFT from the schedule is exactly 0.35 s for every request here, and 0.3495 s from the send.
    assert s["latency"]["ttft"]["percentiles"]["p99"]["value"] == pytest.approx(0.35)
    assert s["latency"]["ttft_sent"]["percentiles"]["p50"]["value"] == pytest.approx(0.3495)
    assert s["schedule_lag"]["percentiles"]["p99"]["value"] == pytest.approx(0.0005)
    # TTFT 0.35 > 0.2 everywhere: nothing meets the SLO, so cost per good request is undefined.
    assert s["slo"]["met"] == 0 and s["cost"]["usd_per_1k_good_requests"] is None
    assert s["slo"]["violations"]["failed"] == 1
    assert s["utilisation"]["mean_running_share"] == pytest.approx(0.5)
    assert s["cost"]["wall_time_source"] == "step_trace"
    assert s["cost"]["wall_time_s"] == pytest.approx(7.0)
    assert set(s["tenants"]) == {"t0", "t1", "t2"}
    assert s["tenants"]["t0"]["requests"] == 21  # 20 + the failed one (default tenant "t0")
    assert s["validity"]["valid"] is True


def test_summary_agrees_with_component_functions_and_is_deterministic(both) -> None:
    cont = both[both["engine"] == "continuous"]
    slo = SLO(ttft_s=0.2, tpot_s=0.05)
    s1 = summarize(cont, slo=slo, seed=1, n_boot=200, wall_time_s=10.0)
    s2 = summarize(cont, slo=slo, seed=1, n_boot=200, wall_time_s=10.0)
    assert s1 == s2
    g = goodput(cont, slo)
    assert s1["slo"]["met"] == g["met"] == 60
    assert s1["slo"]["attainment"] == pytest.approx(60 / 61)
    # $2/h x 10 s = $0.00556; per 1k good requests: 0.00556 / 60 x 1000.
    assert s1["cost"]["usd_per_1k_good_requests"] == pytest.approx(2.0 * 10 / 3600 / 60 * 1000)
    assert s1["cost"]["wall_time_source"] == "argument"
    assert s1["utilisation"] is None
    # The seed drives only the bootstrap intervals, never the point estimates.
    other = summarize(cont, slo=slo, seed=2, n_boot=200)["latency"]["e2e"]["percentiles"]["p90"]
    same = s1["latency"]["e2e"]["percentiles"]["p90"]
    assert other["value"] == same["value"]


def test_summarize_refuses_mixed_runs_and_by_engine_splits(both) -> None:
    with pytest.raises(HarnessInputError, match="engine"):
        summarize(both)
    summaries = summarize_by_engine(both, {"static": steps_frame(_steps())}, n_boot=100)
    assert list(summaries) == ["continuous", "static"]
    table = summary_table(summaries)
    assert table.index.tolist() == ["continuous", "static"]
    assert table.loc["static", "ttft_p99_s"] == pytest.approx(0.35)
    assert table.loc["continuous", "ttft_p50_s"] == pytest.approx(0.05)
    assert table.loc["static", "slot_use"] == pytest.approx(0.5)
    assert table.loc["continuous", "failed"] == 1


def test_summarize_end_to_end_from_truncated_file(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [json.dumps(r) for r in _run("static", 0.0)]
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])
    with pytest.warns(UserWarning):
        frame = load_records(path)
    s = summarize(frame, n_boot=50)
    assert s["requests"]["total"] == 60
    assert [f["name"] for f in s["validity"]["flags"]] == ["truncated_records"]
    assert s["cost"]["wall_time_source"] == "records"


def test_summarize_empty_records_is_json() -> None:
    s = summarize(records_frame([]), n_boot=10)
    json.dumps(s, allow_nan=False)
    assert s["requests"]["total"] == 0
    assert s["latency"]["ttft"]["count"] == 0
    assert s["throughput"]["steady"]["request_rate"] is None


def test_jsonable_converts_numpy_and_non_finite() -> None:
    out = jsonable({"a": np.float64("nan"), "b": np.int64(3), 4: (np.bool_(True), float("inf")), "c": np.arange(2)})
    assert out == {"a": None, "b": 3, "4": [True, None], "c": [0, 1]}
    assert type(out["b"]) is int
