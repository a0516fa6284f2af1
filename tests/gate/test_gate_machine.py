"""A trial that ran while the machine was busy is named in the gate's verdict (a flag, not a failure)."""

from __future__ import annotations

import json

from harness.cli import main
from harness.jsonl import JsonlWriter
from tests.fixtures.gate_runs import synthetic_run

BUSY = {
    "sampled": True,
    "busy": True,
    "reasons": ["other processes used 62% of the machine's CPU"],
    "load_avg_1m": 3.1,
    "others_share": 0.62,
    "steal_share": 0.0,
}
QUIET = {"sampled": True, "busy": False, "reasons": [], "load_avg_1m": 0.4, "others_share": 0.02, "steal_share": 0.0}


def write_run(path, records, noise):
    path.mkdir()
    with JsonlWriter(path / "records.jsonl") as writer:
        for record in records:
            writer.write(record)
    outcomes = [{"engine": "e", "trial": 0, "machine": noise}]
    (path / "manifest.json").write_text(json.dumps({"workload": {"fingerprint": "f" * 64}, "outcomes": outcomes}))
    return path


def test_the_gate_names_busy_trials(tmp_path, capsys):
    base = write_run(tmp_path / "base", synthetic_run(1), QUIET)
    cand = write_run(tmp_path / "cand", synthetic_run(2), BUSY)
    again = write_run(tmp_path / "again", synthetic_run(3), QUIET)
    code = main(
        [
            "gate",
            "--baseline",
            str(base),
            "--candidate",
            str(cand),
            str(again),
            "--unit",
            "request",
            "--rule",
            "tpot.p50 <= +50%",
            "--json",
            str(tmp_path / "v.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0  # flagged, not failed: the rule still decides
    note = (
        "machine busy during 1 of 2 candidate trial(s) (0): other processes used 62% of the machine's CPU; "
        "their timings include the neighbours' load"
    )
    assert f"- note: {note}" in out
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["candidate"]["busy_trials"] == {"0": "other processes used 62% of the machine's CPU"}
    assert verdict["baseline"]["busy_trials"] == {} and note in verdict["notes"]
