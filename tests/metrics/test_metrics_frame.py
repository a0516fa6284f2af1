import json
import warnings

import numpy as np
import pytest

from engines.step_record import STEP_FIELDS
from harness.errors import HarnessInputError
from harness.metrics import load_records, load_steps, records_frame, steps_frame
from harness.metrics.frame import RECORD_COLUMNS, TruncatedLineWarning, flatten_token_times
from harness.records import RequestRecord
from tests.fixtures.records import make_record


def _record(rid: str) -> RequestRecord:
    return RequestRecord(
        request_id=rid,
        engine="static",
        tenant="a",
        priority=0,
        max_tokens=2,
        ignore_eos=True,
        prompt_tokens=5,
        t_scheduled=0.0,
        t_sent=0.001,
        t_first_token=0.5,
        t_finish=0.7,
        token_times=[0.5, 0.7],
        output_tokens=2,
        finish_reason="length",
    )


def test_records_frame_accepts_dataclasses_and_dicts_and_types_columns() -> None:
    frame = records_frame([_record("r1"), {"request_id": "r2", "t_scheduled": 1.0, "t_sent": 1.0}])
    assert list(frame.columns) == list(RECORD_COLUMNS)
    assert frame["t_admitted"].dtype == np.float64
    assert frame["t_admitted"].isna().all()  # never set on either record
    assert frame.loc[1, "tenant"] == "default"  # filled default for the dict missing it
    assert frame.loc[1, "token_times"] == []
    assert frame.loc[0, "token_times"] == [0.5, 0.7]
    assert frame["engine_output_tokens"].isna().all()
    assert frame["output_tokens"].tolist() == [2, 0]
    assert frame["error_type"].isna().all()


def test_records_frame_keeps_unknown_columns_and_handles_empty() -> None:
    frame = records_frame([{**make_record("r1"), "future_field": 3}])
    assert frame.loc[0, "future_field"] == 3
    empty = records_frame([])
    assert len(empty) == 0
    assert set(RECORD_COLUMNS) <= set(empty.columns)


def test_records_frame_rejects_missing_required_field() -> None:
    with pytest.raises(HarnessInputError, match="t_sent"):
        records_frame([{"request_id": "r1", "t_scheduled": 0.0}])


def test_load_records_skips_and_reports_truncated_last_line(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [json.dumps(make_record(f"r{i}", t_scheduled=float(i))) for i in range(3)]
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:25])  # crash mid-write: no closing brace
    with pytest.warns(TruncatedLineWarning):
        frame = load_records(path)
    assert frame["request_id"].tolist() == ["r0", "r1"]
    assert len(frame.attrs["skipped_lines"]) == 1
    assert frame.attrs["skipped_lines"][0]["line"] == 3


def test_load_records_clean_file_has_no_skips(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(make_record(f"r{i}")) + "\n" for i in range(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = load_records(path)
    assert len(frame) == 2
    assert frame.attrs["skipped_lines"] == []


def test_load_records_rejects_corrupt_middle_line(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(make_record("r0")) + "\n{oops\n" + json.dumps(make_record("r2")) + "\n")
    with pytest.raises(HarnessInputError, match=":2:"):
        load_records(path)


def _slow_load_records(path):
    """The line-by-line reader alone, which pyarrow's fast path must agree with."""
    from harness.metrics.frame import _load

    return _load(path, records_frame)


def test_load_records_reads_with_pyarrow_what_the_line_reader_reads(tmp_path) -> None:
    import pandas as pd

    rows = [
        make_record("r0", gaps=[0.1, 0.2], cached_tokens=3, session="s", turn=1),
        {"request_id": "r1", "t_scheduled": 1.0, "t_sent": 1.25},  # every optional field missing
        {**make_record("r2", tenant="b"), "t_first_token": None, "token_times": [], "finish_reason": None},
        {**make_record("r3"), "error_type": "timeout", "error_message": "caf\u00e9 \u2013 late", "future": 7},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from harness.metrics.arrow import parse_records

    assert len(parse_records(path)[0]) == 4  # pyarrow reads this file: the comparison is of the two readers
    fast, slow = load_records(path), _slow_load_records(path)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert fast.loc[0, "token_times"] == slow.loc[0, "token_times"] and type(fast.loc[0, "token_times"]) is list
    assert fast.loc[3, "future"] == 7  # a newer schema's field is kept
    assert fast.attrs == slow.attrs == {"skipped_lines": []}


@pytest.mark.parametrize(
    ("field", "value"),
    [("t_first_token", float("nan")), ("token_times", [0.5, float("inf")]), ("t_finish", float("-inf"))],
)
def test_load_records_refuses_nan_and_infinity_with_their_line(tmp_path, field, value) -> None:
    """JSON has neither; pyarrow's reader takes both, so the fast path must leave the file to the line reader."""
    path = tmp_path / "records.jsonl"
    rows = [make_record(f"r{i}") for i in range(3)]
    rows[1][field] = value  # json.dumps writes NaN, Infinity, -Infinity
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(HarnessInputError, match=r"records.jsonl:2: not a JSON object"):
        load_records(path)


def test_load_records_missing_file_is_a_user_error(tmp_path) -> None:
    with pytest.raises(HarnessInputError, match="cannot read"):
        load_records(tmp_path / "nope.jsonl")


def test_load_steps_types_columns(tmp_path) -> None:
    path = tmp_path / "steps.jsonl"
    step = {"step": 0, "t_start": 0.0, "t_end": 0.5, "phase": "prefill", "running_ids": ["a"], "max_slots": 4}
    path.write_text(json.dumps(step) + "\n")
    frame = load_steps(path)
    assert frame.loc[0, "running_ids"] == ["a"]
    assert frame.loc[0, "admitted"] == []  # absent list fields become empty lists
    assert frame.loc[0, "padded_tokens"] == 0
    assert frame["blocked_reason"].isna().all()
    assert tuple(steps_frame([]).columns) == STEP_FIELDS  # the columns are the engines' StepRecord


def test_flatten_token_times_keeps_owner_rows() -> None:
    frame = records_frame(
        [
            make_record("a", gaps=[1.0]),
            make_record("b", gaps=None, output_tokens=0, token_times=[]),
            make_record("c", ttft=2.0),
        ]
    )
    flat, owner = flatten_token_times(frame["token_times"])
    assert flat.tolist() == pytest.approx([0.1, 1.1, 2.0])
    assert owner.tolist() == [0, 0, 2]


def _step_lines(n: int) -> list[str]:
    steps = [
        {
            "step": i,
            "scheduler": "static",
            "t_start": i * 0.1,
            "t_end": i * 0.1 + 0.05,
            "phase": "decode",
            "batch_id": i // 2 if i % 3 else None,
            "running_ids": ["a", "b"],
            "preempted": ["b"] if i == 1 else [],
            "blocked_reason": "no_slot" if i % 2 else None,
            "max_slots": 4,
            "waiting": i,
            "decisions": [{"stage": 5, "action": "defer", "id": "c", "why": "no_slot", "free_blocks": 3}],
        }
        for i in range(n)
    ]
    del steps[-1]["batch_id"], steps[-1]["waiting"]  # an older trace's line: optional keys absent
    return [json.dumps(s) for s in steps]


def test_the_step_reader_without_id_lists_types_every_other_column_as_the_full_one(tmp_path) -> None:
    from harness.metrics.arrow import ID_LISTS

    path = tmp_path / "steps.jsonl"
    path.write_text("\n".join(_step_lines(5)) + "\n")
    full, light = load_steps(path), load_steps(path, id_lists=False)
    assert list(light.columns) == list(full.columns) and light.attrs["skipped_lines"] == []
    for name in full.columns:
        if name in ID_LISTS:
            assert (light[name] == ()).all()
        elif name == "preempted":
            assert light[name].tolist() == [tuple(ids) for ids in full[name]] and light[name].map(len).sum() == 1
        else:
            assert light[name].dtype == full[name].dtype, name
            assert light[name].equals(full[name]), name


def test_the_step_reader_without_id_lists_names_what_is_wrong_as_the_full_one(tmp_path) -> None:
    lines = _step_lines(3)
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text(lines[0] + "\n{oops\n" + lines[2] + "\n")
    with pytest.raises(HarnessInputError, match=r"corrupt\.jsonl:2:"):
        load_steps(corrupt, id_lists=False)
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:30])  # a crash mid-write
    with pytest.warns(TruncatedLineWarning):
        frame = load_steps(truncated, id_lists=False)
    assert len(frame) == 2 and frame.attrs["skipped_lines"][0]["line"] == 3
    no_phase = tmp_path / "no_phase.jsonl"
    no_phase.write_text(
        "".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "phase"}) + "\n" for line in lines)
    )
    with pytest.raises(HarnessInputError, match="phase"):
        load_steps(no_phase, id_lists=False)
    with pytest.raises(HarnessInputError, match="cannot read"):
        load_steps(tmp_path / "nope.jsonl", id_lists=False)


def test_a_file_read_again_unchanged_is_not_parsed_again_and_a_rewrite_is(tmp_path) -> None:
    """The metrics and then the report read a run's records.jsonl in one process: the second read shares the
    first's table; a rewrite of the same length at once (the same modification time, likely) is read anew."""
    from harness.metrics.arrow import RECORD_SCHEMA, read_json_lines

    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(make_record(f"r{i}")) + "\n" for i in range(2)))
    first = read_json_lines(path, RECORD_SCHEMA, unexpected="infer")
    assert read_json_lines(path, RECORD_SCHEMA, unexpected="infer") is first
    path.write_text(path.read_text().replace('"r1"', '"r2"'))
    assert load_records(path)["request_id"].tolist() == ["r0", "r2"]
    assert read_json_lines(path, None).num_rows == 2  # another reading of the file: its own table
