"""Live progress: a bar on a terminal, a status line every few seconds in a log (piped output)."""

import io
import time

from harness.cli import main
from harness.progress import ProgressPrinter, default_mode


def test_a_log_gets_whole_lines_now_and_then_and_a_last_one() -> None:
    out = io.StringIO()
    p = ProgressPrinter("static t0", "lines", out, every_s=0.05)
    p(3, 1, 0, 10)  # printed at once: the run is seen to start
    p(4, 2, 0, 10)  # too soon: not printed
    time.sleep(0.06)
    p(8, 5, 1, 10)
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in out.getvalue()
    assert lines[0].startswith("[static t0] sent 3/10, done 1, in flight 2, ")
    assert lines[1].startswith("[static t0] sent 8/10, done 5, in flight 3, 1 failed, ")
    assert lines[2].startswith("[static t0] sent 8/10, done 5, in flight 3, 1 failed, ") and lines[2].endswith(" s")


def test_a_terminal_gets_one_line_redrawn() -> None:
    out = io.StringIO()
    p = ProgressPrinter("c", "bar", out)
    p(10, 10, 0, 10)
    p.close()
    assert out.getvalue().startswith("\r[c] [" + "#" * 30 + "] sent 10/10") and out.getvalue().endswith("\n")
    assert default_mode(io.StringIO()) == "lines"


def test_a_piped_run_prints_status_lines_on_stderr(tmp_path, capsys) -> None:
    assert (
        main(
            [
                "run",
                "--workload",
                "chat-small",
                "--requests",
                "8",
                "--engine",
                "zero",
                "--no-report",
                "--out",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "[zero t0] sent " in err and ", done 8, in flight 0, " in err
