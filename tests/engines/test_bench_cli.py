"""`batchmark bench engines` runs all three contenders and writes the documented JSON keys."""

from __future__ import annotations

import json

from harness.cli import main


def test_bench_engines_small(tmp_path, capsys):
    out = tmp_path / "bench.json"
    code = main(["bench", "engines", "--requests", "24", "--max-output", "24", "--batch", "8", "--json", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    assert "raw loop (ceiling)" in table and "continuous / static" in table
    result = json.loads(out.read_text())
    for key in (
        "raw_tok_s",
        "static_tok_s",
        "continuous_tok_s",
        "continuous_over_static",
        "continuous_over_raw",
        "static_slot_waste",
    ):
        assert result[key] > 0, key
    # three static batches must each run to their slowest member: more steps, slots left idle
    assert result["static_steps"] > result["continuous_steps"]
    assert result["continuous_occupancy"] > result["static_occupancy"]
