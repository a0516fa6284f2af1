"""Every JSON reader of workload files (workloads.readers.raw.parse_json) turns JSON nested past the parser's
own limit, which Python's json raises as RecursionError rather than a decode error, into one line naming the
file, line and field, exit 2: a session file and a Weka slice were a RecursionError traceback (#31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

DEEP = "[" * 100_000  # json recurses once per level: far past Python's recursion limit
TURN = '{"session": "s", "turn": 0, "at_s": 0, "new_tokens": 5, "output_tokens": 1}'
CONVERSATION = '{"id": "a", "requests": [{"t": 0, "type": "n", "in": 5, "out": 1}]}'
ROW = '{"timestamp": 0, "input_length": 5, "output_length": 3}'
WINDOWS = "0,0.5,1.2,Gamma,0.7,1.4\n"


def _files(tmp_path: Path, reader: str) -> tuple[list[str], Path, int, str]:
    """(argv, the file that is too deep, its line, what the message says it is not) for `reader`."""
    if reader == "trace rows":
        path = tmp_path / "t.jsonl"
        path.write_text(f"{ROW}\n{DEEP}\n")
        return ["workload", "describe", str(path)], path, 2, "a trace row"
    if reader == "session turns":
        path = tmp_path / "s.jsonl"
        path.write_text(f"{TURN}\n{DEEP}\n")
        return ["workload", "describe", str(path)], path, 2, "a session turn"
    if reader == "Weka conversations":
        path = tmp_path / "w.jsonl"
        path.write_text(f"{CONVERSATION}\n{DEEP}\n")
        return ["workload", "convert-weka", str(path), str(tmp_path / "out.jsonl")], path, 2, "a conversation"
    if reader == "ShareGPT":
        path = tmp_path / "sharegpt.json"
        path.write_text(DEEP)
        spec = tmp_path / "spec.toml"
        spec.write_text(f'[sessions]\nfile = "{path}"\nformat = "sharegpt"\nrate = 1.0\n')
        return ["workload", "describe", str(spec)], path, 1, "a list of conversations"
    path = tmp_path / "chunk-7-dataset.json"  # ServeGen: a client's windows and their dataset beside them
    path.write_text(DEEP)
    (tmp_path / "chunk-7-trace.csv").write_text(WINDOWS)
    return ["workload", "describe", str(tmp_path / "chunk-7-trace.csv")], path, 1, "a dataset of windows"


@pytest.mark.parametrize("reader", ["trace rows", "session turns", "Weka conversations", "ShareGPT", "ServeGen"])
def test_json_nested_too_deeply_is_one_line_and_exit_2(tmp_path: Path, capsys, reader: str) -> None:
    argv, path, line, what = _files(tmp_path, reader)
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"batchmark: error: {path}:{line}: json: nested too deeply for {what}\n", err
