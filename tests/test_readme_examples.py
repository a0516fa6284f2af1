"""Every shell example of the README states its time on a 2-core machine, and every `batchmark` one runs (issue #32).

The examples are read from README.md itself, so this test cannot drift from the docs. Each is run cut down, with
the substitutions below (and only those): in-process engines become simulated ones of the same batching (no
model to load), the schedule keeps its first `FIRST` requests, one trial is run, and the run writes to a
temporary directory without a report. `make` targets are not run here: they install the environment and run
this very suite.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
TIME_STATED = re.compile(r"Expected time on a 2-core machine: [^.]*\d")
FIRST = 6  # requests kept of each example's schedule
ADDED = ["--first", str(FIRST), "--no-report", "--no-progress"]


@dataclass(frozen=True)
class Example:
    command: list[str]  # one shell command, continuation lines joined
    after: str  # the README's text from the block's end to the next block or heading


def examples() -> list[Example]:
    text = README.read_text(encoding="utf-8")
    found: list[Example] = []
    for block in re.finditer(r"^```sh\n(.*?)^```\n(.*?)(?=^```|^#|\Z)", text, re.S | re.M):
        body = block.group(1).replace("\\\n", " ")
        for line in body.splitlines():
            command = line.split("#", 1)[0].strip()
            if command:
                found.append(Example(shlex.split(command), block.group(2)))
    return found


def simulated(spec: str) -> str:
    """The same batching, simulated: `static` -> sim:scheduler=static,label=static; `continuous:k=v` -> sim:k=v."""
    kind, _, rest = spec.partition(":")
    keys = [k for k in rest.split(",") if k]
    if not any(k.startswith("label=") for k in keys):
        keys.append(f"label={kind}")
    if kind == "static":
        keys.insert(0, "scheduler=static")
    return "sim:" + ",".join(keys) if kind in ("static", "continuous") else spec


def cut_down(argv: list[str], out: Path) -> list[str]:
    cut: list[str] = []
    values = iter(argv)
    for arg in values:
        if arg == "--engine":
            cut += [arg, simulated(next(values))]
        elif arg == "--out":
            next(values)
            cut += [arg, str(out)]
        elif arg == "--repeat":
            next(values)
            cut += [arg, "1"]
        else:
            cut.append(arg)
    return cut + ADDED


ALL = examples()


def test_the_readme_has_examples_and_each_states_its_time() -> None:
    assert any(e.command[0] == "batchmark" for e in ALL) and any(e.command[0] == "make" for e in ALL)
    for e in ALL:
        assert TIME_STATED.search(e.after), f"README: no 'Expected time on a 2-core machine' after {e.command}"


@pytest.mark.parametrize("example", [e for e in ALL if e.command[0] == "batchmark"], ids=lambda e: e.command[1])
def test_each_batchmark_example_runs_cut_down(example: Example, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = cut_down(example.command[1:], tmp_path / "run")
    assert main(argv) == 0, argv
    out = capsys.readouterr().out
    assert "estimate:" in out  # the run said what it would take before it started
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    labels = {argv[i + 1].rsplit("label=", 1)[1] for i, a in enumerate(argv) if a == "--engine"}
    assert labels and labels == set(metrics["engines"]), (labels, list(metrics["engines"]))
