"""The demo's simulated comparison says, on every line that shows its numbers, that it is simulated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.demo_at_scale import simulate_at_scale


def test_the_comparison_is_labelled_simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = simulate_at_scale(tmp_path / "scale", workload="chat-small")  # the demo replays azure-conv
    printed = capsys.readouterr().out
    assert printed.lstrip().startswith("SIMULATED at scale: chat-small, all 64 requests")
    assert "llama-3.1-8b on one H100" in printed and printed.count("SIMULATED: sim-") == 2
    assert "sim-static" in printed and "sim-continuous" in printed and "roofline cost model" in printed
    # how far to trust it, from the validation table (issue #30): the default calibration's measured H100 error
    assert printed.count("TRUST: sim-") == 2 and "measured against h100 step times" in printed
    assert "calibration public-a100-h200-kernels measured against h100" in printed, printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert [e["cost_model"]["hardware"]["name"] for e in manifest["engines"]] == ["h100", "h100"]
    assert not (out / "report.html").exists()  # `batchmark demo` writes it, as for every run
