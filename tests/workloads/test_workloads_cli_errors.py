"""Malformed input exits with code 2 and one line naming the file, line and field; never a traceback."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
GOOD_ROW = "2023-11-16 18:15:46.6805900,374,44\n"


def one_error_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["workload", "describe", *argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err  # exactly one line
    assert "Traceback" not in err
    assert err.startswith("batchmark: error: ")
    return err.removeprefix("batchmark: error: ").rstrip("\n")


# (file name, content, expected "line: field: what" after "<path>:") for each kind of malformed trace
CASES = {
    "missing column": (
        "a.csv",
        "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.68,374\n",
        ["--format", "azure"],
        "1: GeneratedTokens: missing column (the file has: TIMESTAMP, ContextTokens)",
    ),
    "non-numeric length": (
        "a.csv",
        AZURE_HEADER + GOOD_ROW + "2023-11-16 18:15:47.0,abc,44\n",
        [],
        "3: ContextTokens: not a number: 'abc'",
    ),
    "negative length": (
        "a.csv",
        AZURE_HEADER + GOOD_ROW * 2 + "2023-11-16 18:15:47.0,12,-5\n",
        [],
        "4: GeneratedTokens: negative token count: '-5'",
    ),
    "fractional length": (
        "a.csv",
        AZURE_HEADER + "2023-11-16 18:15:47.0,12.5,5\n",
        [],
        "2: ContextTokens: not a whole number: '12.5'",
    ),
    "empty length": (
        "a.csv",
        AZURE_HEADER + GOOD_ROW + "2023-11-16 18:15:47.0,12,\n",
        [],
        "3: GeneratedTokens: empty value",
    ),
    "unparsable timestamp": (
        "a.csv",
        AZURE_HEADER + GOOD_ROW + "16/11/2023 18:15,12,5\n",
        [],
        "3: TIMESTAMP: cannot parse timestamp '16/11/2023 18:15' (expected ISO 8601)",
    ),
    "empty file": ("a.csv", "", [], "1: file: empty file"),
    "header only": ("a.csv", AZURE_HEADER, [], "2: file: no requests: the file has a header but no rows"),
    "wrong field count": (
        "a.csv",
        AZURE_HEADER + GOOD_ROW + "2023-11-16 18:15:47.0,12,5,9\n",
        [],
        "3: row: expected 3 fields like the header, found 4",
    ),
    "JSONL saved as .csv": (
        "a.csv",
        '{"timestamp": 0, "input_length": 5, "output_length": 3}\n',
        [],
        "1: columns: not a known CSV trace layout",
    ),
    "CSV saved as .jsonl": (
        "a.jsonl",
        AZURE_HEADER + GOOD_ROW,
        [],
        "1: json: not valid JSON (Expecting value at column 1); expected one JSON object per line",
    ),
    "JSON array instead of lines": (
        "a.jsonl",
        '[{"timestamp": 0, "input_length": 5, "output_length": 3}]\n',
        [],
        "1: json: expected a JSON object per line, found list",
    ),
    "unknown extension": ("a.txt", AZURE_HEADER + GOOD_ROW, [], "1: format: cannot tell the format"),
    "JSONL row missing a key": (
        "a.jsonl",
        '{"timestamp": 0, "input_length": 5, "output_length": 3}\n\n{"timestamp": 5, "input_length": 5}\n',
        [],
        "3: output_length: missing field",
    ),
    "JSONL boolean length": (
        "a.jsonl",
        '{"timestamp": 0, "input_length": true, "output_length": 3}\n',
        [],
        "1: input_length: not a number: True",
    ),
    "JSONL bad hash ids": (
        "a.jsonl",
        '{"timestamp": 0, "input_length": 5, "output_length": 3, "hash_ids": [1, "x"]}\n',
        [],
        "1: hash_ids: expected a list of integers, found [1, 'x']",
    ),
    "mooncake non-numeric timestamp": (
        "a.jsonl",
        '{"timestamp": "soon", "input_length": 5, "output_length": 3}\n',
        [],
        "1: timestamp: not a number: 'soon'",
    ),
    "generic mapping names a missing column": (
        "a.csv",
        "t,n_in,n_out\n0,5,3\n",
        ["--columns", "arrival=t,input_tokens=n_in,output_tokens=tokens_out"],
        "1: tokens_out: missing column (the file has: t, n_in, n_out)",
    ),
    "overflowing length": (  # once read back as -9.2e18 and passed the negative check
        "a.csv",
        AZURE_HEADER + GOOD_ROW + "2023-11-16 18:15:47.0,99999999999999999999999,5\n",
        [],
        "3: ContextTokens: '99999999999999999999999' is beyond 10,000,000",
    ),
    "JSONL overflowing length": (
        "a.jsonl",
        '{"timestamp": 0, "input_length": 5, "output_length": 1e30}\n',
        [],
        "1: output_length: 1e+30 is beyond 10,000,000",
    ),
    "duplicated header": (  # the last column was silently taken
        "a.csv",
        "t,n_in,n_out,n_in\n0,5,3,9\n",
        ["--columns", "arrival=t,input_tokens=n_in,output_tokens=n_out"],
        "1: n_in: column named twice in the header",
    ),
    "BurstGPT non-numeric response tokens": (
        "b.csv",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n6,ChatGPT,100,n/a,100,Conversation log\n",
        [],
        "3: Response tokens: not a number: 'n/a'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_trace_is_one_line_exit_2(
    case: str, write: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    name, content, flags, expected = CASES[case]
    path = write(name, content)
    message = one_error_line(capsys, str(path), *flags)
    assert message.startswith(f"{path}:{expected}"), message


def test_binary_file_is_reported_not_decoded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "trace.csv"
    path.write_bytes(gzip.compress((AZURE_HEADER + GOOD_ROW).encode()))
    assert one_error_line(capsys, str(path)).startswith(f"{path}:1: file: not UTF-8 text")


def test_missing_file_and_unknown_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.csv"
    assert one_error_line(capsys, str(missing)) == f"{missing}: file: no such file"
    message = one_error_line(capsys, "no-such-preset")
    assert message.startswith(
        "no-such-preset: workload: no such preset or file (presets: agentic, agentic-fanout, azure-code,"
    )


def test_bad_option_values_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_error_line(capsys, "chat-small", "--rate", "-2") == "rate: must be > 0, found -2.0"
    assert one_error_line(capsys, "chat-small", "--max-context", "1") == "max_context: must be >= 2, found 1"
    assert one_error_line(capsys, "azure-conv", "--requests", "99999") == (
        "requests: cannot sample 99999 requests from 19366; use rate to make more"
    )
    assert one_error_line(capsys, "azure-conv", "--start", "99999").startswith(
        "start_s: no requests between 99999 s and inf s"
    )
    assert one_error_line(capsys, "azure-conv", "--columns", "arrival") == (
        "columns: expected KEY=COLUMN pairs separated by commas, found 'arrival'"
    )
    assert one_error_line(capsys, "azure-conv", "--format", "csv").startswith("format: only applies to a trace file")
    assert one_error_line(capsys, "azure-conv", "--rate-cv", "2") == "rate_cv: only applies together with rate"
    assert one_error_line(capsys, "chat-small", "--think-time", "1").startswith("think_time_s: only applies to a")


def test_subprocess_exit_code_and_single_stderr_line(write: Callable[[str, str], Path]) -> None:
    path = write("bad.csv", AZURE_HEADER + GOOD_ROW + "2023-11-16 18:15:47.0,-3,5\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "workload", "describe", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"batchmark: error: {path}:3: ContextTokens: negative token count: '-3'\n"


def test_a_directory_and_a_closed_loop_rate_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert one_error_line(capsys, str(tmp_path)) == f"{tmp_path}: file: is a directory, not a trace file"
    assert one_error_line(capsys, "closed-loop-small", "--rate", "3") == (
        "rate: a closed loop has no arrival rate; its users set the load"
    )


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            "requests = 10000000000\n[[tenants]]\nrate = 1\ninput = 8\noutput = 8\n",
            "spec.toml:1: requests: must be <= 10,000,000, found 10000000000",
        ),
        (
            'requests = 10\n[[tenants]]\nrate = 1\ninput = { dist = "lognormal", median = 1e308, sigma = 1 }\n'
            "output = 8\n",
            "spec.toml:4: tenants[0].input.median: must be <= 10,000,000 tokens, found 1e+308",
        ),
        (
            'requests = 10\n[[tenants]]\nrate = 1\ninput = { dist = "normal", mean = 100, std = 1e7 }\noutput = 8\n',
            "spec.toml:4: tenants[0].input: draws would reach 6e+07 tokens, above 10,000,000: set max",
        ),
        (
            'requests = 10\n[[tenants]]\nrate = 1\ninput = { dist = "normal", mean = 100, std = nan }\noutput = 8\n',
            "spec.toml:4: tenants[0].input.std: expected a number >= 0, found nan",
        ),
        (
            "duration_s = 1e300\n[[tenants]]\nrate = 1e10\ninput = 8\noutput = 8\n",
            "duration_s: 1e+10 req/s for 1e+300 s is more requests than a workload may hold (10,000,000)",
        ),
    ],
)
def test_overflowing_spec_numbers_are_one_line(
    toml: str, expected: str, write: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write("spec.toml", toml)
    message = one_error_line(capsys, str(path))
    assert message.removeprefix(str(path.parent) + "/").startswith(expected), message
