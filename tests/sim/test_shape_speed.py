"""A run's speed against the profile's fit runs, shape by shape (engines/sim/shape_speed.py): a fit keeps each step
shape's measured / priced level, a later run's steps are measured against it, and `sim fidelity` prints one line a
real engine saying how much faster or slower its trials ran the fit runs' shapes."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from engines.sim.fitted import fit_steps, load_profile
from engines.sim.shape_speed import MIN_STEPS, run_speed, shape_keys, shape_levels
from engines.step_features import FEATURE_NAMES
from harness.cli import main
from harness.simulation import TRACE_FIELDS, speed_line, trial_speeds
from tests.sim.test_profile_v3 import plans, timed

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity"
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


def _levels_by_shape(features: np.ndarray) -> np.ndarray:
    """A level a shape: the fit runs run some shapes above their price and some below."""
    return np.array([1.0 + (zlib.crc32(key.encode()) % 7 - 3) / 20 for key in shape_keys(features)])


def test_the_shapes_are_decode_rows_by_keys_band_and_prefill_rows_by_power_of_two() -> None:
    row = np.zeros((2, len(FEATURE_NAMES)), dtype=np.int64)
    row[0, [_F["decode_seqs"], _F["decode_context"]]] = 3, 3 * 700  # 700 keys a row: band 2
    row[1, [_F["prefill_tokens"], _F["decode_seqs"], _F["decode_context"]]] = 100, 2, 50
    assert shape_keys(row) == ["decode:3:2", "prefill:7:2"]


def test_a_run_measured_against_the_fit_runs_levels_gives_its_speed() -> None:
    fit = timed(plans(800, seed=1))
    priced = fit.duration_s.copy()  # the law itself prices them: each shape's level is what the machine adds
    measured = priced * _levels_by_shape(fit.features)
    levels = shape_levels(fit.features, measured, priced)
    assert levels and all(n >= MIN_STEPS for n in _counts(fit.features, levels))
    run = timed(plans(300, seed=2))
    slow = run.duration_s * _levels_by_shape(run.features) * 1.12  # 12% slower than the fit runs, every shape
    speed, covered = run_speed(run.features, slow, run.duration_s, levels)
    assert speed == pytest.approx(0.12, abs=1e-9) and 0.5 < covered <= 1.0
    assert run_speed(run.features, slow, run.duration_s, {"decode:99:0": 1.0}) == (None, 0.0)


def _counts(features: np.ndarray, levels: dict[str, float]) -> list[int]:
    keys = shape_keys(features)
    return [keys.count(key) for key in levels]


def test_a_fit_keeps_its_levels_and_a_run_of_its_own_steps_ran_at_them() -> None:
    steps = timed(plans(600, seed=4))
    steps.duration_s *= _levels_by_shape(steps.features)
    profile = fit_steps(steps)
    levels = profile.fit["shape_levels"]
    assert levels
    priced = profile.price_steps(steps.features)
    speed, _ = run_speed(steps.features, steps.duration_s, priced, levels)
    assert abs(speed) < 0.05  # its own steps: about its own level (medians, so not exactly)


def _traced_run(tmp_path: Path, factors: list[float]) -> tuple[Path, Path]:
    """The burst fixture's run with a step trace of its continuous engine per trial (each the same steps, timed at
    `factors[k]` x the fit runs' level), and a profile whose fit kept the levels of those steps."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURE / "burst", run)
    steps = timed(plans(400, seed=5))
    profile = load_profile(FIXTURE / "profile.json")
    priced = profile.price_steps(steps.features)
    level = _levels_by_shape(steps.features)
    profile.fit["shape_levels"] = shape_levels(steps.features, priced * level, priced)
    profile.save(tmp_path / "profile.json")
    (run / "steps").mkdir()
    for trial, factor in enumerate(factors):
        t, lines = 0.0, []
        for k, (row, duration) in enumerate(zip(steps.features, priced * level * factor, strict=True)):
            fields = {TRACE_FIELDS[name]: int(v) for name, v in zip(FEATURE_NAMES, row, strict=True)}
            lines.append(
                json.dumps({"step": k, "t_start": t, "t_end": t + duration, "num_running": 1, "finished": []} | fields)
            )
            t += duration + 1e-4
        (run / "steps" / f"continuous-t{trial}.jsonl").write_text("\n".join(lines) + "\n")
    return run, tmp_path / "profile.json"


def test_each_trial_s_speed_is_read_from_its_trace(tmp_path: Path) -> None:
    run, profile = _traced_run(tmp_path, [1.0, 1.1, 0.9])
    speeds = trial_speeds(run, "continuous", load_profile(profile))
    assert [s["trial"] for s in speeds] == [0, 1, 2]
    assert [s["speed"] for s in speeds] == pytest.approx([0.0, 0.1, -0.1], abs=1e-9)
    assert trial_speeds(run, "static", load_profile(profile)) == []  # no trace: nothing to say
    assert trial_speeds(run, "continuous", load_profile(FIXTURE / "profile.json")) is None  # no levels kept
    assert speed_line("continuous", []) is None and "unknown" in speed_line("continuous", None)
    unknown = {"trial": 0, "speed": None, "covered": 0.0}
    assert "unknown (no step of its trials has a shape" in speed_line("continuous", [unknown])
    assert "shapes -, +10.0% against" in speed_line("continuous", [unknown, {**unknown, "speed": 0.1, "covered": 1}])


def test_a_trace_it_cannot_read_leaves_the_table_and_says_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, profile = _traced_run(tmp_path, [1.0])
    (run / "steps" / "continuous-t0.jsonl").write_text('{"step": 0, "t_start": 0.0}\n')  # no step features
    assert main(["sim", "fidelity", str(run), "--profile", str(profile), "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "TTFT p50" in out and "SPEED: continuous: unknown (" in out and "no step features" in out


def test_sim_fidelity_prints_the_trials_speed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, profile = _traced_run(tmp_path, [1.2, 1.05])
    out = tmp_path / "table.json"
    argv = ["sim", "fidelity", str(run), "--profile", str(profile), "--seeds", "1", "--json", str(out)]
    assert main(argv) == 0
    speed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("SPEED:")]
    assert len(speed) == 1 and "continuous: the real trials ran the fit runs' step shapes +20.0%, +5.0%" in speed[0]
    table = {entry["engine"]: entry for entry in json.loads(out.read_text())}
    assert [s["speed"] for s in table["continuous"]["trial_speeds"]] == pytest.approx([0.2, 0.05], abs=1e-9)
    assert "trial_speeds" not in table["static"]
