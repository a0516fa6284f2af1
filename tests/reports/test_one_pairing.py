"""One pairing decision: the gate and the comparison table (metrics.json, `compare`, the report) pair the same
two runs alike, open loop, closed loop and across workloads (harness.judge.pairing.decide_pairing)."""

from __future__ import annotations

import json

import pytest

from harness.gate import GateConfig, evaluate, load_run, rules_from_texts
from harness.jsonl import JsonlWriter
from reports.compare import compare_runs
from reports.load import load_runs
from tests.fixtures.gate_runs import synthetic_run

CLOSED = {"scenario": {"kind": "closed", "users": 4, "think_time_s": 0.0}, "open_loop": False}


def _write(path, records, *, fingerprint="f" * 16, settings=None):
    path.mkdir()
    with JsonlWriter(path / "records.jsonl") as writer:
        for record in records:
            writer.write(record)
    manifest = {"workload": {"fingerprint": fingerprint}, "settings": {"slo": {"ttft_s": 2.0}, **(settings or {})}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def _closed(records, pace):
    """A closed loop of 4 users: each sends its own requests in order; the send times follow the engine's pace."""
    return [{**r, "user": i % 4, "t_scheduled": r["t_scheduled"] * pace} for i, r in enumerate(records)]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairing")
    a, b = synthetic_run(1, n=60), synthetic_run(2, n=60, speed=1.2)
    return {
        "open loop": (_write(root / "oa", a), _write(root / "ob", b), True),
        "closed loop": (
            _write(root / "ca", _closed(a, 1.0), settings=CLOSED),
            _write(root / "cb", _closed(b, 1.2), settings=CLOSED),
            True,
        ),
        "different workloads": (_write(root / "wa", a), _write(root / "wb", b, fingerprint="0" * 16), False),
        "open against closed": (_write(root / "xa", a), _write(root / "xb", _closed(b, 1.0), settings=CLOSED), False),
    }


@pytest.mark.parametrize("case", ["open loop", "closed loop", "different workloads", "open against closed"])
def test_the_gate_and_the_comparison_take_one_pairing_decision(pairs, case):
    base, cand, expected = pairs[case]
    config = GateConfig(rules=rules_from_texts(["ttft.p50 <= +5%"]), unit="request", n_boot=50)
    gate = evaluate(config, load_run(base), load_run(cand)).pairing
    (table,) = compare_runs(load_runs([base, cand]))
    assert gate["paired"] == (table.kind == "paired") == expected, (gate, table.reason)
    assert table.reason.startswith(gate["reason"])  # one decision, one reason


def test_each_output_names_the_quantity_it_tested(pairs):
    from harness.gate import to_markdown

    base, cand, _ = pairs["open loop"]
    config = GateConfig(rules=rules_from_texts(["ttft.p50 <= +5%", "ttft.p50 <= 1s"]), unit="request", n_boot=50)
    verdict = evaluate(config, load_run(base), load_run(cand))
    change, limit = (r.quantity for r in verdict.results)
    assert change == (
        "ttft.p50 of each side's pooled requests, candidate / baseline - 1 (requests paired), one-sided against the "
        "tolerance"
    )
    assert limit == "the candidate's ttft.p50, one-sided against the limit"
    assert f"- `ttft.p50 <= +5%` tests {change}" in to_markdown(verdict)
    (table,) = compare_runs(load_runs([base, cand]))
    assert table.quantity == "median of per-request b - a" and table.to_json()["quantity"] == table.quantity
