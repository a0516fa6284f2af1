"""A study takes an arm's change trial by trial only where the judge's pairing decision pairs the arm's trial
with the baseline's (harness.study.pairing); an arm that replayed another schedule gets the ratio of means."""

from __future__ import annotations

import json

from harness.jsonl import JsonlWriter
from harness.study.pairing import mark_pairings
from harness.study.verdict import aggregate
from tests.fixtures.gate_runs import synthetic_run


def _unit(root, arm, trial, records, value):
    run = root / f"{arm}-t{trial}"
    run.mkdir()
    with JsonlWriter(run / "records.jsonl") as writer:
        for record in records:
            writer.write({**record, "engine": arm})
    (run / "manifest.json").write_text(json.dumps({"workload": {"fingerprint": "f" * 16}}))
    return {"arm": arm, "slice": "tune", "trial": trial, "run_dir": str(run), "metrics": {"tpot": value}}


def test_an_arm_on_another_schedule_is_not_paired_trial_by_trial(tmp_path):
    results = []
    for trial, (base, same, other) in enumerate([(1.0, 1.1, 1.3), (2.0, 2.2, 2.6)]):
        results += [
            _unit(tmp_path, "baseline", trial, synthetic_run(trial, n=30), base),
            _unit(tmp_path, "same", trial, synthetic_run(10 + trial, n=30), same),
            _unit(tmp_path, "busier", trial, synthetic_run(20 + trial, n=30, schedule_seed=7), other),
        ]
    mark_pairings(results)
    assert {r["arm"]: r.get("pairing", {}).get("paired") for r in results} == {
        "baseline": None,
        "same": True,
        "busier": False,
    }
    table = aggregate(results, ["tpot"])["tune"]
    same, busier = table["same"]["tpot"], table["busier"]["tpot"]
    assert same["paired"] and abs(same["change"] - 0.1) < 1e-12 and same["change_ci"][0] is not None
    # another schedule: the ratio of the means (3.9 / 3.0 - 1), and no interval to claim a win on
    assert not busier["paired"] and abs(busier["change"] - 0.3) < 1e-12 and busier["change_ci"] == [None, None]
