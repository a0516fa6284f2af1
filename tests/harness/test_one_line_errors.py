"""Inputs that once gave a traceback instead of one line: each is now exit 2 and a line naming what is wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("batchmark: error: ") and "Traceback" not in err, err
    return err.removeprefix("batchmark: error: ").strip()


@pytest.fixture(scope="module")
def zero_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zero") / "run"
    argv = ["run", "--workload", "chat-small", "--requests", "20", "--time-scale", "40", "--engine", "zero",
            "--out", str(out), "--no-report", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return out


def test_a_gate_rules_file_that_is_not_utf8(tmp_path, capsys, zero_run):
    rules = tmp_path / "gate.toml"
    rules.write_bytes(b'rules = ["ttft.p99 <= +5%"]\n# caf\xe9\n')
    message = one_line(capsys, ["gate", "--baseline", str(zero_run), "--candidate", str(zero_run), "--rules",
                                str(rules)])  # fmt: skip
    assert message == f"{rules}:2: field file: not UTF-8 text (a binary file?)"


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("priority", "high", "priority: expected an integer, found 'high'"),
        ("priority", 2**70, "priority: expected an integer, found 1180591620717411303424"),
        ("token_times", [0.1, None], "token_times: expected a list of numbers, found [0.1, None]"),
        ("token_times", 1.5, "token_times: expected a list of numbers, found 1.5"),
        ("t_sent", [1], "t_sent: expected a number or null, found [1]"),
        ("request_id", "\ud800", "request_id: not valid Unicode (a lone surrogate)"),
        ("request_id", None, "request_id: missing (every record needs it)"),
    ],
)
@pytest.mark.parametrize("command", ["report", "gate"])
def test_report_and_gate_on_a_wrongly_typed_record_field(tmp_path, capsys, zero_run, field, value, expected, command):
    run = tmp_path / "run"
    shutil.copytree(zero_run, run)
    records = run / "records.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    lines[4][field] = value
    records.write_text("".join(json.dumps(r) + "\n" for r in lines))
    (run / "metrics.json").unlink()
    if command == "report":
        argv = ["report", str(run), "--no-html", "--markdown", str(tmp_path / "s.md")]
    else:
        argv = ["gate", "--baseline", str(zero_run), "--candidate", str(run), "--rule", "ttft.p99 <= +50%"]
    assert one_line(capsys, argv) == f"{records}:5: {expected}"
