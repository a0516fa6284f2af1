"""A line of a run directory's JSON-lines files that is not JSON is one error line naming the file and the
line, exit 2, for every command that reads the file: no warning before it, no traceback. Only a bad last
line after whole ones is taken as a crash mid-write (skipped with a warning); a file whose only line is
bad holds nothing to read. The run directory is a fixture run's copy, broken one line at a time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main

READERS = {  # which commands read which file of a run directory
    "records.jsonl": ("report", "compare", "gate", "export"),
    "requests.jsonl": ("report", "compare"),
    "steps": ("report", "compare"),
}
CASES = [(name, command, where) for name, commands in READERS.items() for command in commands for where in ("only", 3)]


def _argv(command: str, run: Path, base: Path, tmp_path: Path) -> list[str]:
    return {
        "report": ["report", str(run), "--no-html", "--markdown", str(tmp_path / "s.md")],
        "compare": ["compare", str(base), str(run)],
        "gate": [
            "gate",
            "--baseline",
            str(base),
            "--candidate",
            str(run),
            "--engine",
            "continuous",
            "--rule",
            "tpot.p50 <= +5%",
        ],
        "export": ["export", str(run), "--out", str(tmp_path / "export")],
    }[command]


@pytest.mark.parametrize(("name", "command", "where"), CASES)
def test_a_line_that_is_not_json_is_one_line_and_exit_2(run_dir, tmp_path, capsys, name, command, where):
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    path = run / name if name != "steps" else sorted((run / "steps").iterdir())[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    if where == "only":
        lines = ["not json"]
    else:
        lines[where - 1] = '{"request_id": "r0", oops'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(_argv(command, run, run_dir, tmp_path)) == 2
    err = capsys.readouterr().err
    line = 1 if where == "only" else where
    assert err.count("\n") == 1 and err.startswith(f"batchmark: error: {path}:{line}: not a JSON object: "), err


# Two readers past the records' one: the report's step trace sampled then read in a window (a trace over
# `reports.steps.FULL_READ_BYTES`, lowered here so that a fixture's trace is sampled), and the server series
# (server/<engine>-t<trial>.jsonl, harness.metrics.server_series.read_series). Each names the line the records' reader
# would, in its words.


def _mid_line(path: Path, bad: bytes) -> int:
    """Break the first whole line after the file's middle byte (the windowed read's first probe): `bad` in its
    place, or its t_start made "x" when `bad` is b"t_start"; returns that line's number."""
    data = path.read_bytes()
    start = data.index(b"\n", len(data) // 2) + 1
    end = data.index(b"\n", start)
    if bad == b"t_start":
        bad = json.dumps({**json.loads(data[start:end]), "t_start": "x"}).encode()
    path.write_bytes(data[:start] + bad + data[end:])
    return data[:start].count(b"\n") + 1


def _server_series(run: Path, bad: bytes) -> tuple[Path, int]:
    path = run / "server" / "continuous-t0.jsonl"
    path.parent.mkdir()
    rows = [b'{"t": %d, "ok": true, "running": 3, "waiting": 1, "kv_usage": 0.5}' % t for t in range(5)]
    rows[2] = bad
    path.write_bytes(b"\n".join(rows) + b"\n")
    return path, 3


@pytest.mark.parametrize(
    ("reader", "bad", "says"),
    [
        ("windowed steps", b'{"step": 1, oops', "not a JSON object: "),
        ("windowed steps", b"t_start", "t_start: expected a number or null, found 'x'"),
        ("server series", b'{"t": 2, "ok": tru', "not a JSON object: "),
        ("server series", b'{"ok": true, "running": 3}', "t: expected seconds (a number), found None"),
    ],
)
def test_a_bad_line_past_the_records_reader_is_one_line_and_exit_2(
    run_dir, tmp_path, capsys, monkeypatch, reader, bad, says
):
    import reports.steps

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    if reader == "windowed steps":
        monkeypatch.setattr(reports.steps, "FULL_READ_BYTES", reports.steps.MIN_CHUNK_BYTES)
        path = run / "steps" / "continuous-t0.jsonl"
        assert not reports.steps.read_trace(path).exact  # sampled: the detail view reads a window of the file
        line = _mid_line(path, bad)
        argv = ["report", str(run), "--out", str(tmp_path / "r.html")]  # the HTML's detail view reads the window
    else:
        path, line = _server_series(run, bad)
        argv = ["report", str(run), "--no-html", "--markdown", str(tmp_path / "s.md")]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"batchmark: error: {path}:{line}: {says}"), err


def test_the_window_names_a_bad_line_it_reads_and_skips_a_truncated_last_one(run_dir, tmp_path):
    from harness.metrics.frame import TruncatedLineWarning
    from harness.records import RecordError
    from reports.steps import MIN_CHUNK_BYTES, read_trace

    path = tmp_path / "steps.jsonl"
    lines = (run_dir / "steps" / "continuous-t0.jsonl").read_text(encoding="utf-8").splitlines()
    t_start = read_trace(run_dir / "steps" / "continuous-t0.jsonl").frame["t_start"]
    at = len(lines) * 3 // 4  # past the sample's first 64 KiB, and no probe of the bisection
    path.write_text("\n".join([*lines[: at + 2], "not json", *lines[at + 3 :]]) + "\n", encoding="utf-8")
    with pytest.raises(RecordError, match=rf"^{path}:{at + 3}: not a JSON object: "):
        read_trace(path, full_read_bytes=MIN_CHUNK_BYTES).window(float(t_start[at]), 10)
    path.write_text("\n".join(lines) + '\n{"step": 1, "t_st', encoding="utf-8")  # a crash mid-write
    with pytest.warns(TruncatedLineWarning, match=rf"{path}: skipped unparseable last line {len(lines) + 1} "):
        window = read_trace(path, full_read_bytes=MIN_CHUNK_BYTES).window(float(t_start.iloc[-2]), 10)
    assert window["t_start"].tolist() == t_start.iloc[-2:].tolist()


def test_server_samples_without_ok_are_gaps_not_a_traceback(run_dir, tmp_path):
    """`ok` absent: a failed scrape, as the summary counts it (harness.metrics.server_series); was a KeyError."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    path, _ = _server_series(run, b'{"t": 2, "running": 3}')
    path.write_text(path.read_text().replace('"ok": true, ', ""))
    assert main(["report", str(run), "--out", str(tmp_path / "r.html")]) == 0
    assert "requests running (server)" in (tmp_path / "r.html").read_text(encoding="utf-8")
