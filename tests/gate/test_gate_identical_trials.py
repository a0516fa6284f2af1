"""A deterministic engine repeats itself: `--repeat 3` on the simulator with one seed gives three identical
trials, whose interval has zero width because nothing varied. The gate keeps its outcome (a fact of the
simulator) and says that it rests on identical trials, in the Markdown, the one-line verdict and the JSON."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from harness.cli import main
from harness.judge.tests import IDENTICAL_TRIALS, identical_trials


@pytest.fixture(scope="module")
def sim_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("identical")
    runs, printed = {}, io.StringIO()
    for name, engine in (("h100", "sim"), ("a100", "sim:hardware=a100")):  # the a100 decodes ~40% slower
        runs[name] = root / name
        argv = ["run", "--workload", "chat-small", "--requests", "16", "--engine", engine, "--repeat", "3"]
        with contextlib.redirect_stdout(printed):
            assert main([*argv, "--out", str(runs[name]), "--no-progress"]) == 0
    runs["printed"] = printed.getvalue()
    return runs


def test_the_run_console_and_report_say_identical_trials_instead_of_a_zero_width_ci(sim_runs):
    from reports.load import load_runs
    from reports.tables import repeat_table

    copies = "every trial identical (a deterministic engine or the same seed): no run-to-run noise"
    lines = [line for line in sim_runs["printed"].splitlines() if "TTFT p99 over 3 trials" in line]
    assert len(lines) == 2 and all(line.endswith(f" ms ({copies})") for line in lines), lines
    table = repeat_table(load_runs([sim_runs["h100"]]))
    assert "identical trials: no run-to-run noise" in table and "95% CI" in table


@pytest.mark.parametrize(
    ("candidate", "code", "head"),
    [("h100", 0, "gate: pass (1 rules)"), ("a100", 1, "gate: REGRESSION: tpot.p50 <= +5% (fail: +39")],
)
def test_identical_sim_trials_keep_the_outcome_and_say_it_shows_no_noise(
    sim_runs, tmp_path, capsys, candidate, code, head
):
    path = tmp_path / "v.json"
    capsys.readouterr()
    argv = ["gate", "--baseline", str(sim_runs["h100"]), "--candidate", str(sim_runs[candidate])]
    assert main([*argv, "--rule", "tpot.p50 <= +5%", "--json", str(path)]) == code
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith(head) and last.endswith("[1 of 1 rules on identical trials: no run-to-run noise]")
    assert "(identical trials: no noise) |" in out and IDENTICAL_TRIALS in out  # the Markdown table and note
    rule = json.loads(path.read_text())["rules"][0]
    assert rule["identical_trials"] is True and rule["ci_low"] == rule["ci_high"] and IDENTICAL_TRIALS in rule["note"]


def test_identical_trials_needs_two_trials_of_one_value_on_every_side():
    assert identical_trials([1.0, 1.0], [2.0, 2.0, 2.0])
    assert not identical_trials([1.0, 1.0], [2.0, 2.1])
    assert not identical_trials([1.0], [1.0])  # one trial: no interval at all, another message
    assert not identical_trials([float("nan"), float("nan")])
