"""An error line quotes input; the input's control bytes must not reach the terminal (issue #32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import printable


@pytest.mark.parametrize(
    "header",
    [
        b"TIMESTAMP\x1b]0;pwned\x07,\x1b[31mfoo\n",
        "arrival\u009b2J,x\x00y\n".encode(),
        b"a\x08b,\tc\x7f\n",
        b"arrival_s,\x1b[2Jinput_tokens\n",  # one bad column beside a good one
    ],
)
def test_a_csv_header_with_control_bytes_is_echoed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: bytes
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(header + b"1,2\n")
    assert main(["workload", "describe", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, repr(err)
    assert err.endswith("\n") and err[:-1].isprintable(), repr(err)
    assert "columns" in err, err


def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    assert printable("a\x1b[31mb\ud800\u202ec é") == "a\\x1b[31mb\\ud800\\u202ec é"


def _trace_with_bad_arrival(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,1,1\n\x1b]0;pwn\x07,10,10\n")
    return path


def _path_holding_escapes(tmp_path: Path) -> Path:
    folder = tmp_path / "esc\x1b[31mdir"
    folder.mkdir()
    path = folder / "trace.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,1,1\ninf,1,1\n")
    return path


@pytest.mark.parametrize(
    "where",
    [_trace_with_bad_arrival, _path_holding_escapes, lambda tmp_path: Path("\x1b]0;pwn\x07")],
    ids=["a-value", "the-file-path", "a-workload-name"],
)
def test_control_bytes_anywhere_an_error_quotes_stay_printable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where
) -> None:
    assert main(["workload", "describe", str(where(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err[:-1].isprintable(), repr(err)
