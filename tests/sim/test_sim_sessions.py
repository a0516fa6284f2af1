"""The simulator on multi-turn sessions: the sessions scenario in virtual time, and cached prefix tokens
taken rather than computed, so they cost no step time."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.metrics import load_records, load_steps

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


def test_simulated_sessions_reuse_prefixes_and_turns_wait_for_answers(tmp_path: Path) -> None:
    out = tmp_path / "run"
    spec = tmp_path / "agents.toml"
    spec.write_text(AGENTS)
    argv = ["run", "--out", str(out), "--no-report", "--no-progress", "--workload", str(spec)]
    engines = ["--engine", "sim:label=on", "--engine", "sim:prefix_caching=off,label=off"]
    assert main([*argv, *engines]) == 0
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
