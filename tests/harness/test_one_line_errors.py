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
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "20",
        "--time-scale",
        "40",
        "--engine",
        "zero",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    return out


def test_a_gate_rules_file_that_is_not_utf8(tmp_path, capsys, zero_run):
    rules = tmp_path / "gate.toml"
    rules.write_bytes(b'rules = ["ttft.p99 <= +5%"]\n# caf\xe9\n')
    message = one_line(
        capsys, ["gate", "--baseline", str(zero_run), "--candidate", str(zero_run), "--rules", str(rules)]
    )
    assert message == f"{rules}:2: field file: not UTF-8 text (a binary file?)"


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("priority", "high", "priority: expected an integer, found 'high'"),
        # orjson reads an integer past 64 bits as a float; either way it is no record's priority
        ("priority", 2**70, "priority: expected an integer, found 1.1805916207174113e+21"),
        ("token_times", [0.1, None], "token_times: expected a list of numbers, found [0.1, None]"),
        ("token_times", 1.5, "token_times: expected a list of numbers, found 1.5"),
        ("token_times", [0.1, True], "token_times: expected a list of numbers, found [0.1, True]"),
        ("preemptions", True, "preemptions: expected a count or null, found True"),  # null: an HTTP target (#33)
        ("t_sent", [1], "t_sent: expected a number or null, found [1]"),
        # a lone surrogate: orjson refuses the line (the frame's own check covers records built in memory)
        ("request_id", "\ud800", "not a JSON object: no low surrogate in string: line 1 column 17 (char 16)"),
        ("request_id", None, "request_id: missing (every record needs it)"),
    ],
)
@pytest.mark.parametrize("command", ["report", "gate"])
def test_report_and_gate_on_a_wrongly_typed_record_field(tmp_path, capsys, zero_run, field, value, expected, command):
    run, records = _editable_copy(zero_run, tmp_path)
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    lines[4][field] = value
    records.write_text("".join(json.dumps(r) + "\n" for r in lines))
    if command == "report":
        argv = ["report", str(run), "--no-html", "--markdown", str(tmp_path / "s.md")]
    else:
        argv = ["gate", "--baseline", str(zero_run), "--candidate", str(run), "--rule", "ttft.p99 <= +50%"]
    assert one_line(capsys, argv) == f"{records}:5: {expected}"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        # NaN and out-of-range numbers: before, some crashed after work was done (one writing manifest.json,
        # so the second engine never ran), the negative ones were accepted
        (["--engine", "static:batch_timeout_ms=nan"], "batch_timeout_ms='nan' must be a finite number"),
        (["--engine", "static:batch_timeout_ms=-1"], "batch_timeout_ms='-1' must be >= 0"),
        (["--engine", "continuous:step_delay_ms=nan"], "step_delay_ms='nan' must be a finite number"),
        (["--engine", "continuous:kv_memory_mb=nan"], "kv_memory_mb='nan' must be a finite number"),
        (["--slo-ttft-ms", "nan"], "--slo-ttft-ms nan: must be a finite number > 0"),
        (["--slo-ttft-ms", "-5"], "--slo-ttft-ms -5: must be > 0"),
        (["--price-per-hour", "nan"], "--price-per-hour nan: must be a finite number >= 0"),
        (["--price-per-hour", "-1"], "--price-per-hour -1: must be >= 0"),
        (["--stop-in-flight", "-3"], "--stop-in-flight -3: must be >= 1"),
        (["--stop-error-rate", "2"], "--stop-error-rate 2: must be >= 0 and <= 1"),
        (["--stop-ttft-p99-ms", "inf"], "--stop-ttft-p99-ms inf: must be a finite number > 0"),
        (["--threads", "-1"], "--threads -1: must be >= 1 and <= 4096"),
        (["--threads", "two"], "--threads two: must be an integer"),
        (["--repeat", "0"], "--repeat 0: must be >= 1"),
        (["--tokenizer", "/no/such/dir"], "--tokenizer /no/such/dir: no such directory"),
        # URLs the client would choke on: an IPv6 host missing its ']', a port above 65535
        (["--engine", "http:url=http://[::1:8000"], "is not a valid URL (Invalid IPv6 URL)"),
        (["--engine", "http:url=http://127.0.0.1:70000"], "is not a valid URL (Port out of range 0-65535)"),
        (["--engine", "http", "--url", "http://h:99999"], "--url http://h:99999: is not a valid URL"),
        (["--nosuchflag"], "unrecognized arguments: --nosuchflag"),
    ],
)
def test_bad_numbers_and_urls_are_refused_before_any_work(tmp_path, capsys, flags, expected):
    out = tmp_path / "run"
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "4",
        "--engine",
        "static",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
        *flags,
    ]
    if any(f.startswith("--engine") for f in flags):
        argv.remove("static")
        argv.remove("--engine")
    assert expected in one_line(capsys, argv)
    assert not (out / "manifest.json").exists()  # nothing ran


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_an_out_directory_that_cannot_be_written(tmp_path, capsys, kind):
    out = tmp_path / "taken"
    if kind == "file":
        out.write_text("not a directory")
        expected = f"--out {out}: is a file, not a directory"
    else:
        out = Path("/proc/batchmark-cannot-write-here")  # even root cannot create a directory in /proc
        expected = f"--out {out}: cannot write there"
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "4",
        "--engine",
        "zero",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]
    assert one_line(capsys, argv).startswith(expected)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--host", "999.1.1.1"], "--host 999.1.1.1: not an address to listen on"),
        (["--host", "8.8.8.8"], "--host 8.8.8.8 --port 0: cannot listen (Cannot assign requested address)"),
        (["--port", "70000"], "--port 70000: must be 0..65535"),
    ],
)
def test_serve_refuses_an_address_it_cannot_listen_on_before_loading(capsys, flags, expected):
    assert one_line(capsys, ["serve", "--port", "0", *flags]).startswith(expected)


def test_probe_refuses_a_bad_url_and_bad_numbers(capsys):
    assert "is not a valid URL (Invalid IPv6 URL)" in one_line(capsys, ["probe", "http://[::1:8000"])
    assert one_line(capsys, ["probe", "http://127.0.0.1:9", "--timeout", "nan"]).startswith(
        "--timeout nan: must be a finite number > 0"
    )


def test_a_records_line_holding_two_objects_is_named(tmp_path, capsys, zero_run):
    # the whole file is parsed in one call when it can be: two objects on one line must not pass as two records
    run, records = _editable_copy(zero_run, tmp_path)
    lines = records.read_text().splitlines()
    lines[2] = lines[2] + "," + lines[3]
    records.write_text("\n".join(lines) + "\n")
    message = one_line(capsys, ["report", str(run), "--no-html", "--markdown", str(tmp_path / "s.md")])
    assert message.startswith(f"{records}:3: not a JSON object: ")


def _editable_copy(run_dir, tmp_path):
    """A copy of `run_dir` whose records the test may break; without metrics.json, so they are read again."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "metrics.json").unlink()
    return run, run / "records.jsonl"


def test_a_run_directory_of_one_unreadable_line_is_one_line(tmp_path):
    """On the command line a records file whose only line is not JSON is one error naming that line: not a
    warning (the line skipped as truncated) and then "holds no records" (#31); no source path or quoted code."""
    import subprocess
    import sys
    from pathlib import Path

    run = tmp_path / "garbage"
    run.mkdir()
    (run / "records.jsonl").write_text("not json\n")
    repo = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "harness.cli", "gate", "--baseline", str(run), "--candidate", str(run)]
    done = subprocess.run(
        [*argv, "--rule", "tpot.p50 <= +5%"], capture_output=True, text=True, cwd=repo, env={"PYTHONPATH": str(repo)}
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"batchmark: error: {run}/records.jsonl:1: not a JSON object: ")
