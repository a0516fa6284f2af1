"""`sim fit` says how much of its engines' feature space the fit run covered (issue 30, item 3): each engine's
largest step against its own limits, and the longest request against the model's context, marking what fell short."""

from __future__ import annotations

import json
from pathlib import Path

from harness.fit_coverage import coverage_lines

CONTINUOUS = {
    "name": "continuous",
    "kind": "continuous",
    "options": {"continuous": {"max_running": 32, "max_batched_tokens": 512}},
}
STATIC = {"name": "static", "kind": "static", "options": {"static": {"max_batch": 8}}}


def _run(tmp_path: Path) -> Path:
    (tmp_path / "manifest.json").write_text(json.dumps({"engines": [STATIC, CONTINUOUS]}))
    rows = [{"input_tokens": 2000, "output_tokens": 51}, {"input_tokens": 64, "output_tokens": 8}]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_each_engine_s_limits_and_the_context_are_checked(tmp_path: Path) -> None:
    ranges = {"prefill_tokens": {"min": 8, "max": 512}, "decode_seqs": {"min": 1, "max": 12}}
    lines = coverage_lines([_run(tmp_path)], ["continuous"], ranges, 16384)
    assert lines == [
        "covers, continuous: prefill tokens 512 of 512, decode sequences 12 of 32 (short) per step",
        "covers, context: requests up to 2,051 tokens of max_context 16,384 (short: 13%)",
    ]


def test_a_static_engine_is_checked_on_its_batch_and_held_slots(tmp_path: Path) -> None:
    ranges = {"decode_seqs": {"min": 1, "max": 8}, "held_rows": {"min": 1, "max": 7}}
    lines = coverage_lines([_run(tmp_path)], ["static"], ranges, 2051)
    assert lines == [
        "covers, static: decode sequences 8 of 8, held slots 7 of 7 per step",
        "covers, context: requests up to 2,051 tokens of max_context 2,051",
    ]
