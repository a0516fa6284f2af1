"""The simulator on multi-turn sessions: the sessions scenario in virtual time, and cached prefix tokens
taken rather than computed, so they cost no step time."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.metrics import load_records, load_steps
from reports.analysis import analyse
from reports.fmt import seconds
from reports.markdown import markdown_summary
from reports.report import build_report

AGENTS = """
[sessions]
count = 6
rate = 2.0
turns = 5
shared_prefix_blocks = 2
first_tokens = 60
new_tokens = { dist = "uniform", low = 10, high = 40 }
output = 20
think_s = 0.2
"""


@pytest.fixture(scope="module")
def agents_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Two simulated engines (prefix caching on, off) on six agents' sessions; the run and what it printed."""
    tmp = tmp_path_factory.mktemp("agents")
    out = tmp / "run"
    spec = tmp / "agents.toml"
    spec.write_text(AGENTS)
    argv = ["run", "--out", str(out), "--no-report", "--no-progress", "--workload", str(spec)]
    engines = ["--engine", "sim:label=on", "--engine", "sim:prefix_caching=off,label=off"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*argv, *engines]) == 0
    return out, printed.getvalue()


def test_simulated_sessions_reuse_prefixes_and_turns_wait_for_answers(agents_run: tuple[Path, str]) -> None:
    out, _ = agents_run
    records = load_records(out / "records.jsonl")
    metrics = json.loads((out / "metrics.json").read_text())
    on, off = (records[records["engine"] == e].set_index("request_id") for e in ("on", "off"))
    assert (off["cached_tokens"] == 0).all() and (on["cached_tokens"] > 0).mean() > 0.9
    measured = metrics["engines"]["on"]["prefix_cache"]["hit_rate"]
    predicted = metrics["prefix_cache_predicted"]["16"]["hit_rate"]
    assert 0.8 < measured <= predicted + 1e-9  # an unbounded cache is the ceiling
    for engine in ("on", "off"):  # a later turn is sent after its previous turn finished (plus 0.2 s)
        frame = records[records["engine"] == engine].sort_values(["session", "turn"])
        done = frame.groupby("session")["t_finish"].shift()
        later = frame["turn"] > 0
        assert (frame.loc[later, "t_scheduled"] >= done[later] + 0.2 - 1e-9).all()
    steps = {e: load_steps(out / "steps" / f"{e}-t0.jsonl") for e in ("on", "off")}
    prompts = int(on["prompt_tokens"].sum())
    assert steps["off"]["prefill_tokens"].sum() == prompts  # every prompt token computed
    assert steps["on"]["prefill_tokens"].sum() == prompts - int(on["cached_tokens"].sum())
    assert (on["t_first_token"] - on["t_scheduled"]).median() < (off["t_first_token"] - off["t_scheduled"]).median()


def test_the_report_and_summary_show_what_the_console_shows(agents_run: tuple[Path, str]) -> None:
    out, printed = agents_run
    metrics = json.loads((out / "metrics.json").read_text())
    a = analyse(out)
    html, md = build_report(a), markdown_summary(a)
    predicted = f"{metrics['prefix_cache_predicted']['16']['hit_rate']:.1%} at 16-token blocks"
    for engine in ("on", "off"):
        measured = f"{metrics['engines'][engine]['prefix_cache']['hit_rate']:.1%}"
        # the console's line, and the same two figures in a row of the report's and the summary's table
        assert f"{engine}: prefix cache hit rate {measured} (unbounded cache on this schedule: {predicted})" in printed
        assert f"<tr><td>{engine}</td><td>{measured}</td><td>{predicted}</td></tr>" in html
        assert f"| {engine} | {measured} | {predicted} |" in md
        turns = metrics["engines"][engine]["sessions"]["ttft_by_turn"]
        assert f"{engine}: TTFT p50 by turn  0: " in printed and len(turns) == 5
        row = next(line for line in md.splitlines() if line.startswith(f"| {engine} | ") and "p99" in line)
        assert [c.split(" (")[0] for c in row.strip("| ").split(" | ")[1:]] == [seconds(t["ttft_p50"]) for t in turns]
        for t in turns:
            assert f'{seconds(t["ttft_p50"])}<br><span class="ci">p99 {seconds(t["ttft_p99"])}' in html
    assert "<th>turn 4</th>" in html and 'id="prefix-cache"' in html
