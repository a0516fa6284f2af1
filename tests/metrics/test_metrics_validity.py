from harness.metrics import records_frame, validity, validity_flags
from tests.fixtures.records import make_record


def _flags(frame, **kw):
    return {f.name: f for f in validity_flags(frame, **kw)}


def test_clean_run_is_valid() -> None:
    frame = records_frame([make_record(f"r{i}", t_scheduled=i, t_sent=i + 0.001) for i in range(20)])
    v = validity(frame)
    assert v["valid"] is True and v["flags"] == []
    assert "schedule_lag" in v["checks"]


def test_schedule_lag_flag_counts_late_requests_worst_first() -> None:
    recs = [make_record(f"r{i}", t_scheduled=i, t_sent=i + 0.001) for i in range(98)]
    recs += [
        make_record("late1", t_scheduled=200.0, t_sent=200.05),
        make_record("late2", t_scheduled=201.0, t_sent=201.2),
    ]
    frame = records_frame(recs)
    # p99 of 100 lags with 2 large: position 98.01 lies between the two large lags -> far above 5 ms.
    flag = _flags(frame)["schedule_lag"]
    assert flag.count == 2
    assert flag.example_ids == ["late2", "late1"]
    assert "5 ms" in flag.message
    assert "schedule_lag" not in _flags(frame, lag_threshold_s=0.5)  # the threshold is a parameter


def test_token_count_flags() -> None:
    frame = records_frame(
        [
            make_record("eos", ignore_eos=True, gaps=[0.1], max_tokens=4),  # 2 tokens, asked for 4
            make_record("eos_ok", ignore_eos=True, gaps=[0.1]),
            make_record("stopped", ignore_eos=False, gaps=[0.1], max_tokens=4),  # EOS allowed: fine
            make_record("out", engine_output_tokens=3),  # harness saw 1
            make_record("bos", engine_prompt_tokens=11),  # harness counted 10: a BOS, tolerated
            make_record("prompt", engine_prompt_tokens=12),  # off by 2: another tokenizer
            make_record("times", gaps=[0.1], output_tokens=3),  # 2 token times for 3 tokens
        ]
    )
    flags = _flags(frame)
    assert (flags["ignore_eos_length"].count, flags["ignore_eos_length"].example_ids) == (1, ["eos"])
    assert flags["output_token_count"].example_ids == ["out"]  # "times": harness and engine both say 3
    assert flags["prompt_token_count"].example_ids == ["prompt"]
    assert flags["token_times_count"].example_ids == ["times"]
    assert validity(frame)["valid"] is False


def test_missing_engine_counts_are_not_disagreements() -> None:
    frame = records_frame([make_record("r", engine_output_tokens=None, engine_prompt_tokens=None)])
    assert validity_flags(frame) == []


def test_truncated_records_flag_comes_from_frame_attrs() -> None:
    frame = records_frame([make_record("r")])
    frame.attrs["skipped_lines"] = [{"line": 2}]
    assert _flags(frame)["truncated_records"].count == 1


def test_a_usage_claim_above_max_tokens_is_flagged() -> None:
    frame = records_frame([make_record("liar", max_tokens=4, engine_output_tokens=3_000_000), make_record("ok")])
    flag = _flags(frame)["output_over_max_tokens"]
    assert (flag.count, flag.example_ids) == (1, ["liar"])


def test_the_prompt_cross_check_is_a_share_with_a_one_token_tolerance() -> None:
    recs = [make_record(f"r{i}", engine_prompt_tokens=10 + (i % 4 == 0) * 5) for i in range(8)]
    recs.append(make_record("uncounted", engine_prompt_tokens=None))
    v = validity(records_frame(recs))
    assert v["prompt_tokens"] == {"checked": 8, "off": 2, "share_off": 0.25, "tolerance": 1}
    assert "25.0% of the requests" in next(f["message"] for f in v["flags"] if f["name"] == "prompt_token_count")
