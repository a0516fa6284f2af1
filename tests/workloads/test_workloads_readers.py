"""Readers for files users bring: Azure 2024, BurstGPT, Mooncake-style JSONL, canonical and mapped columns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from workloads import WorkloadError, load_workload, read_azure, read_burstgpt, read_mooncake, read_trace

Write = Callable[[str, str], Path]

BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
118,GPT-4,417,217,634,API log
118,ChatGPT,1360,0,1360,Conversation log
130,GPT-4,99,31,130,API log
"""


def test_azure_2024_week_long_layout_with_utc_offsets(write: Write) -> None:
    # The 2024 files have the same columns; their timestamps carry microseconds and a +00:00 offset.
    path = write(
        "AzureLLMInferenceTrace_code_1week.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.009930+00:00,2162,5\n"
        "2024-05-10 00:00:01.509930+00:00,1035,8\n"
        "2024-05-10 01:00:00.009930+00:00,37,1\n",
    )
    table = read_azure(path)
    assert table.format == "azure"
    assert table.frame["arrival_s"].tolist() == pytest.approx([0.0, 1.5, 3600.0])
    assert table.frame["input_tokens"].tolist() == [2162, 1035, 37]
    w = load_workload(str(path))
    assert [r.output_tokens for r in w.requests] == [5, 8, 1]
    assert w.spec["source"]["format"] == "azure"  # found from the header, no flag needed


def test_burstgpt_drops_failed_rows_with_a_note_and_keeps_tenants(write: Write) -> None:
    path = write("BurstGPT_1.csv", BURSTGPT)
    table = read_burstgpt(path)
    assert table.notes == ("dropped 2 rows with 0 response tokens (failed in source)",)
    assert table.frame["tenant"].tolist() == ["ChatGPT/Conversation log", "GPT-4/API log", "GPT-4/API log"]
    assert table.frame["arrival_s"].tolist() == [0.0, 113.0, 125.0]
    w = load_workload(str(path))
    assert w.notes == ["dropped 2 rows with 0 response tokens (failed in source)"]
    assert w.describe()["tenants"] == {
        "ChatGPT/Conversation log": {"requests": 1, "priority": 0},
        "GPT-4/API log": {"requests": 2, "priority": 0},
    }


def test_mooncake_style_jsonl_from_a_user(write: Write) -> None:
    path = write(
        "my_trace.jsonl",
        '{"timestamp": 1500, "input_length": 700, "output_length": 3, '
        '"hash_ids": [4, 9]}\n{"timestamp": 4500, "input_length": 12, "output_length": 8, "hash_ids": [4]}\n',
    )
    table = read_mooncake(path)
    assert table.frame["arrival_s"].tolist() == [0.0, 3.0]  # milliseconds, re-based to the first request
    assert table.frame["prefix_hash_ids"].tolist() == [(4, 9), (4,)]
    assert read_trace(path).format == "mooncake"  # sniffed from the keys


def test_generic_csv_with_a_column_mapping(write: Write) -> None:
    path = write("mine.csv", "t_ms,user,prio,prompt,n_in,n_out\n2000,alice,1,hello there,5,7\n500,bob,-1,,3,4\n")
    mapping = {
        "arrival": "t_ms",
        "input_tokens": "n_in",
        "output_tokens": "n_out",
        "tenant": "user",
        "priority": "prio",
        "prompt_text": "prompt",
    }
    w = load_workload(str(path), columns=mapping, time_unit="ms")
    assert [(r.arrival_s, r.tenant, r.priority, r.prompt_text) for r in w.requests] == [
        (0.0, "bob", -1, None),
        (1.5, "alice", 1, "hello there"),
    ]
    assert w.notes == ["sorted by arrival: 1 rows came before an earlier timestamp in the file"]
    assert w.spec["source"]["columns"]["arrival"] == "t_ms" and w.spec["source"]["time_unit"] == "ms"


def test_generic_jsonl_with_datetime_arrivals(write: Write) -> None:
    path = write(
        "chat.jsonl",
        '{"when": "2024-01-01T00:00:00Z", "p": 10, "c": 2, "text": "hi"}\n'
        '{"when": "2024-01-01T00:00:02.5Z", "p": 11, "c": 3, "text": null}\n',
    )
    table = read_trace(
        path,
        columns={"arrival": "when", "input_tokens": "p", "output_tokens": "c", "prompt_text": "text"},
        time_unit="datetime",
    )
    assert table.frame["arrival_s"].tolist() == [0.0, 2.5]
    assert table.frame["prompt_text"].tolist() == ["hi", None]


def test_canonical_columns_need_no_mapping(write: Write) -> None:
    path = write("export.csv", "arrival_s,input_tokens,output_tokens,tenant\n0.5,10,2,a\n1.0,0,5,b\n2.0,4,3,\n")
    table = read_trace(path)
    assert table.format == "canonical-csv"
    assert table.frame["tenant"].tolist() == ["a", "default"]
    assert table.notes == ("dropped 1 rows with 0 input tokens (input_tokens) (an empty prompt)",)


def test_a_trace_with_only_unusable_rows_is_an_error(write: Write) -> None:
    path = write("zeros.csv", "arrival_s,input_tokens,output_tokens\n0,5,0\n1,0,3\n")
    with pytest.raises(WorkloadError, match=r"zeros.csv: file: no usable requests: all 2 rows"):
        read_trace(path)


def test_a_spec_file_can_point_at_a_trace_next_to_it(write: Write) -> None:
    write("burst.csv", BURSTGPT)
    spec = write("replay.toml", '[trace]\npath = "burst.csv"\nformat = "burstgpt"\n\n[transforms]\ntime_scale = 2.0\n')
    w = load_workload(str(spec))
    assert w.name == "replay"
    assert [r.arrival_s for r in w.requests] == [0.0, 56.5, 62.5]
    assert w.spec["source"]["file"] == "burst.csv"  # the name, not the machine-specific path


def test_unknown_mapping_key_is_reported(write: Write) -> None:
    path = write("x.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(WorkloadError, match=r"^columns: unknown key 'inputs'"):
        read_trace(path, columns={"arrival": "a", "inputs": "b", "output_tokens": "c"})


def test_quoted_csv_fields_and_line_numbers_after_a_multiline_field(write: Write) -> None:
    text = 'arrival_s,input_tokens,output_tokens,prompt_text\n0,3,2,"hello, world"\n1,4,2,"two\nlines"\n2,5,2,plain\n'
    table = read_trace(write("quoted.csv", text))
    assert table.frame["prompt_text"].tolist() == ["hello, world", "two\nlines", "plain"]
    bad = write("quoted_bad.csv", text + '3,x,2,"z"\n')
    with pytest.raises(WorkloadError, match=r"quoted_bad.csv:6: input_tokens: not a number: 'x'$"):
        read_trace(bad)


def test_crlf_line_ends_and_blank_lines_keep_line_numbers(write: Write) -> None:
    text = (
        "\r\nTIMESTAMP,ContextTokens,GeneratedTokens\r\n\r\n2023-11-16 18:15:46.68,1,2\r\n,,\r\n"
        "2023-11-16 18:15:47.68,3,4\r\n"
    )
    assert read_azure(write("crlf.csv", text)).frame["input_tokens"].tolist() == [1, 3]
    bad = write("crlf_bad.csv", text + "2023-11-16 18:15:48.68,x,4\r\n")
    with pytest.raises(WorkloadError, match=r"crlf_bad.csv:7: ContextTokens: not a number: 'x'$"):
        read_azure(bad)
    short = write("short.csv", text + "2023-11-16 18:15:48.68,4\r\n")
    with pytest.raises(WorkloadError, match=r"short.csv:7: row: expected 3 fields like the header, found 2$"):
        read_azure(short)
