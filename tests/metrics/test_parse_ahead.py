"""A step trace parsed while it is written (`harness.metrics.parse_ahead`): reading it back finds the table
made, equal to the reader's own parse; anything else about the file leaves the reader to parse it itself."""

import json

import pandas as pd
import pytest

from harness.errors import HarnessInputError
from harness.jsonl_batch import BatchedJsonlWriter
from harness.metrics import arrow, load_steps
from harness.metrics.arrow import STEP_SCHEMA, read_json_lines
from harness.metrics.parse_ahead import ParseAhead
from tests.metrics.test_metrics_frame import _step_lines


@pytest.fixture(autouse=True)
def _no_kept_tables():
    arrow._TABLES.clear()
    yield
    arrow._TABLES.clear()


def _written(path, lines: list[str], monkeypatch, piece_bytes: int = 300) -> None:
    """`lines` through the simulator's writer, fed to a ParseAhead in pieces of a few lines."""
    monkeypatch.setattr("harness.metrics.parse_ahead.PIECE_BYTES", piece_bytes)
    ahead = ParseAhead(STEP_SCHEMA)
    with BatchedJsonlWriter(path, buffer_bytes=100, on_flush=ahead.feed) as writer:
        for line in lines:
            writer.write(json.loads(line))
    ahead.finish(path)


def test_the_trace_parsed_ahead_is_the_table_the_reader_finds_and_equals_its_own_parse(tmp_path, monkeypatch) -> None:
    path = tmp_path / "steps.jsonl"
    _written(path, _step_lines(40), monkeypatch)
    assert len(arrow._TABLES) == 1  # kept before any reading
    ahead = read_json_lines(path, STEP_SCHEMA)
    assert ahead is next(iter(arrow._TABLES.values())) and ahead.column(0).num_chunks > 1  # parsed in pieces
    frame = load_steps(path, id_lists=False)
    arrow._TABLES.clear()
    assert read_json_lines(path, STEP_SCHEMA) is not ahead
    pd.testing.assert_frame_equal(frame, load_steps(path, id_lists=False), check_exact=True)


def test_a_trace_that_held_lines_before_or_one_the_reader_refuses_is_left_to_the_reader(tmp_path, monkeypatch) -> None:
    appended = tmp_path / "appended.jsonl"
    appended.write_text(_step_lines(1)[0] + "\n")  # the writer appends: the table would lack this line
    _written(appended, _step_lines(10), monkeypatch)
    assert not arrow._TABLES and len(load_steps(appended, id_lists=False)) == 11
    arrow._TABLES.clear()
    nan = tmp_path / "nan.jsonl"
    data = ("\n".join(_step_lines(3)).replace('"waiting": 0', '"waiting": NaN') + "\n").encode()
    nan.write_bytes(data)
    ahead = ParseAhead(STEP_SCHEMA)
    ahead.feed(data)
    ahead.finish(nan)
    assert not arrow._TABLES  # pyarrow takes NaN, the reader does not: it names the line itself
    with pytest.raises(HarnessInputError, match=r"nan\.jsonl:1"):
        load_steps(nan, id_lists=False)


def test_the_writer_hands_on_every_byte_it_writes_in_whole_lines(tmp_path) -> None:
    fed: list[bytes] = []
    path = tmp_path / "steps.jsonl"
    with BatchedJsonlWriter(path, buffer_bytes=100, on_flush=fed.append) as writer:
        for line in _step_lines(7):
            writer.write(json.loads(line))
    assert b"".join(fed) == path.read_bytes() and len(fed) > 1 and all(data.endswith(b"\n") for data in fed)


def test_the_records_writer_hands_on_each_line_and_a_records_file_parsed_ahead_is_kept(tmp_path) -> None:
    from harness.jsonl import JsonlWriter
    from harness.metrics import load_records
    from harness.metrics.arrow import RECORD_SCHEMA
    from tests.fixtures.records import make_record

    path = tmp_path / "records.jsonl"
    ahead = ParseAhead(RECORD_SCHEMA, "infer")
    with JsonlWriter(path, on_write=ahead.feed) as writer:
        for i in range(3):
            writer.write_fast(make_record(f"r{i}"))
    ahead.finish(path)
    assert len(arrow._TABLES) == 1  # kept before any reading
    assert read_json_lines(path, RECORD_SCHEMA, unexpected="infer") is next(iter(arrow._TABLES.values()))
    frame = load_records(path)
    arrow._TABLES.clear()
    pd.testing.assert_frame_equal(frame, load_records(path), check_exact=True)
