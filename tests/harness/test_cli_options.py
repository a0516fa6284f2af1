"""Commands build their flags from the engine and workload option tables, and check them before any work."""

from __future__ import annotations

import argparse

import pytest

from engines.options import ENGINE_OPTIONS
from harness.cli import build_parser, main
from harness.cli.serve import engine_options
from workloads.options import OVERRIDES


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def _command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["run", "demo", "sweep", "calibrate"])
def test_replaying_commands_take_every_engine_and_workload_option(command):
    flags = _flags(_command(command))
    assert {o.flag_name for o in ENGINE_OPTIONS if o.flag} <= flags
    assert {o.flag for o in OVERRIDES} <= flags


def test_a_no_flag_says_it_turns_its_option_off():
    helps = {s: a.help for a in _command("run")._actions for s in a.option_strings}
    turned_off = [o.flag_name for o in ENGINE_OPTIONS if o.flag and o.type is bool and o.default]
    assert {"--no-prefix-caching", "--no-engine-process"} <= set(turned_off)
    assert all(helps[flag].startswith("turn off (on by default): ") for flag in turned_off)
    # what follows says what the option does when on, so "turn off" reads right
    assert "split a prompt" in helps["--no-chunked-prefill"] and "reuse the KV blocks" in helps["--no-prefix-caching"]


def test_serve_takes_the_in_process_options_at_its_own_profile():
    parser = _command("serve")
    flags = _flags(parser)
    assert {"--max-running", "--max-batched-tokens", "--policy", "--kv-blocks", "--batch-timeout"} <= flags
    assert "--url" not in flags  # an HTTP client option does not configure a served engine
    served = engine_options(parser.parse_args([]))
    assert served.continuous.max_batched_tokens == 2048  # the "serve" profile
    assert engine_options(parser.parse_args(["--max-batched-tokens", "256"])).continuous.max_batched_tokens == 256


def test_workload_describe_takes_every_workload_option():
    sub = next(a for a in _command("workload")._actions if isinstance(a, argparse._SubParsersAction))
    assert {o.flag for o in OVERRIDES} <= _flags(sub.choices["describe"])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "--engine", "zero", "--max-running", "0"], "--max-running 0: must be >= 1"),
        (["run", "--engine", "zero", "--kv-memory-mb", "inf"], "--kv-memory-mb inf: must be a finite number"),
        (["run", "--engine", "zero", "--policy", "lottery"], "--policy lottery: expected one of"),
        (["run", "--engine", "zero:max_batch=4"], "max_batch does not apply to a zero engine"),
        (["run", "--engine", "zero", "--scenario", "closed"], "--scenario closed: give --closed-loop-users"),
        (["serve", "--max-batched-tokens", "0"], "--max-batched-tokens 0: must be >= 1"),
        (["sweep", "--engine", "zero", "--block-size", "x"], "--block-size x: is not an integer"),
    ],
)
def test_bad_options_stop_before_any_work(tmp_path, capsys, argv, needle):
    code = main([*argv, "--out", str(tmp_path / "out")] if argv[0] != "serve" else argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "out").exists()


def test_the_command_line_starts_without_the_heavy_packages():
    """Flags come from the option tables, but building them must not load torch, pandas or scipy: `--help`
    and light commands stay fast (the packages load their modules on first use)."""
    import subprocess
    import sys

    code = (
        "import sys; from harness.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch', 'transformers', 'pandas', 'numpy', 'scipy', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_a_simulated_run_loads_neither_scipy_stats_nor_aiohttp(tmp_path):
    """A one-engine simulated run with its report tests and inverts no distribution and scrapes no server:
    scipy.stats (about a second of every run) and aiohttp load only where they are used
    (docs/measurements/2026-12-06-sim-run-speed.md)."""
    import subprocess
    import sys

    code = (
        "import sys; from harness.cli import main; "
        f"code = main(['run', '--workload', 'chat-small', '--requests', '8', '--engine', 'sim', '--no-progress', "
        f"'--out', {str(tmp_path / 'run')!r}]); "
        "print(code, sorted(m for m in ('scipy.stats', 'aiohttp', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 []", out
    assert (tmp_path / "run" / "report.html").exists()
