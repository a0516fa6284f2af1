"""One judge: metrics.json's comparison, `batchmark compare` and the report show one estimate, interval and
p-value for one pair of engine runs, because all three take them from harness.judge.comparison. Every fixture
run directory of the report tests with two engine runs goes through it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reports.analysis import analyse

# tests/reports/conftest.py's run directories holding two engine runs (other_schedule_dir holds one)
TWO_ENGINE_DIRS = ["run_dir", "after_dir"]


@pytest.mark.parametrize("fixture", TWO_ENGINE_DIRS)
def test_metrics_json_compare_and_report_show_one_comparison(fixture, request):
    run_dir = request.getfixturevalue(fixture)
    metrics = json.loads((run_dir / "metrics.json").read_text())["comparison"]
    (other, pair) = next(iter(metrics["pairs"].items()))
    (comparison,) = analyse(run_dir).comparisons  # what the report and `batchmark compare` render
    assert (comparison.a.engine, comparison.b.engine) == (metrics["baseline"], other)
    assert comparison.kind == pair["kind"] == "paired"
    assert comparison.quantity == pair["quantity"] == "median of per-request b - a"  # named where it is shown
    table = comparison.table
    for metric, row in pair["deltas"].items():
        shown = table.loc[metric]
        for key, ours in (
            ("median_delta", "delta"),
            ("ci_low", "ci_low"),
            ("ci_high", "ci_high"),
            ("p_value", "p_value"),
            ("p_holm", "p_holm"),
        ):
            a, b = row[key], float(shown[ours])
            assert (a is None and np.isnan(b)) or a == b, (metric, key, a, b)
        assert row["verdict"] == shown["verdict"]


@pytest.mark.parametrize("fixture", TWO_ENGINE_DIRS)
def test_the_gate_pairs_and_measures_as_the_comparison_does(fixture, request):
    run_dir = request.getfixturevalue(fixture)
    from harness.gate import GateConfig, evaluate, load_run, rules_from_texts

    (comparison,) = analyse(run_dir).comparisons
    config = GateConfig(rules=rules_from_texts(["tpot.p50 <= +5%", "ttft.p50 <= +5%"]), unit="request", n_boot=200)
    a, b = comparison.a.engine, comparison.b.engine
    verdict = evaluate(config, load_run(run_dir, engine=a), load_run(run_dir, engine=b))
    assert verdict.pairing["paired"] == (comparison.kind == "paired")
    for rule in verdict.results:  # the medians the gate judges are the comparison's, request for request
        row = comparison.table.loc[rule.name.split(".")[0]]
        assert (rule.baseline, rule.candidate) == (row["median_a"], row["median_b"]), rule.name
