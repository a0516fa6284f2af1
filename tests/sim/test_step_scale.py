"""`step_scale`: a simulated engine whose every step takes its priced time times a factor (a twin judged at its
real trial's measured speed, engines/sim/shape_speed.py). Each step of one request lasts exactly that much longer,
on the decode runs' array path (the roofline, no noise) and on the step-by-step path (a fitted profile's noise)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main

PROFILE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity" / "profile.json"
RUN = ["run", "--workload", "chat-small", "--first", "1", "--no-report", "--no-progress"]


def _durations(tmp_path: Path, spec: str) -> list[float]:
    out = tmp_path / spec.replace(":", "_").replace(",", "_").replace("/", "_")
    assert main([*RUN, "--engine", spec, "--out", str(out)]) == 0
    trace = next((out / "steps").glob("*.jsonl"))
    return [row["t_end"] - row["t_start"] for row in map(json.loads, trace.read_text().splitlines())]


@pytest.mark.parametrize("base", ["sim", f"sim:profile={PROFILE},noise=true,seed=3"])
def test_every_step_takes_its_price_times_the_scale(tmp_path: Path, base: str) -> None:
    plain = _durations(tmp_path, f"{base},label=plain" if ":" in base else "sim:label=plain")
    scaled = _durations(tmp_path, f"{base},label=scaled,step_scale=1.25" if ":" in base else "sim:step_scale=1.25")
    assert len(plain) == len(scaled) > 10
    assert scaled == pytest.approx([1.25 * d for d in plain], rel=1e-9)


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_a_scale_that_is_not_positive_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert main([*RUN, "--engine", f"sim:step_scale={value}", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step_scale" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
