"""`step_scale_shapes`: a simulated engine that prices at `step_scale` only the steps whose shape
(engines/sim/shape_speed.py) is among the given ones, every other step at its plain price; a twin at its real
trial's speed scales only the shapes that speed was measured on. The rule is checked step by step, on the
step-by-step loop and inside decode runs (whose context crosses from one shape's band into the next), and with
the option unset every step is scaled, as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from engines.sim.engine import SimEngine, SimOptions
from engines.sim.shape_speed import shape_key, shape_keys
from engines.step_features import FEATURE_NAMES, StepFeatures
from harness.cli import main
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen.virtual import run_virtual_open_loop
from harness.simulation import TRACE_FIELDS
from tests.sim.test_decode_run import schedule

PROFILE = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite_v11" / "runs" / "profile-continuous.json"
ROOFLINE = "sim:model=llama-3.1-8b,hardware=h100,kv_blocks=200,max_running=8"  # decode runs on arrays, no noise
# every decode shape of keys-a-row band 1 (256-511) and one prefill shape: the run's steps fall on both sides
SHAPES = frozenset({f"decode:{rows}:1" for rows in range(1, 65)} | {"prefill:7:0"})
RUN = ["run", "--workload", "chat-small", "--first", "1", "--no-report", "--no-progress"]


def test_the_scalar_shape_key_is_the_array_rule_step_by_step() -> None:
    rng = np.random.default_rng(30)
    rows = rng.integers(0, 5000, size=(4000, len(FEATURE_NAMES)))
    rows[rng.random(4000) < 0.5, FEATURE_NAMES.index("prefill_tokens")] = 0  # decode steps as often as prefills
    rows[rng.random(4000) < 0.2, FEATURE_NAMES.index("held_rows")] = 0
    small = rng.random(4000) < 0.3  # few decode rows: every band, 0 to the last (8)
    rows[small, FEATURE_NAMES.index("decode_seqs")] = rng.integers(0, 4, size=int(small.sum()))
    keys = shape_keys(rows)
    assert [shape_key(StepFeatures(*map(int, row))) for row in rows] == keys
    assert [shape_key(row) for row in rows.tolist()] == keys
    assert {k.split(":")[0] for k in keys} == {"prefill", "decode"} and {k[-2:] for k in keys} >= {":0", ":8"}


class _Flat:
    """A cost model pricing every step at 10 ms."""

    kind = "flat"

    def step_time(self, features: StepFeatures) -> float:
        return 0.01

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}


def _engine(**options: Any) -> SimEngine:
    return SimEngine(SimOptions(num_blocks=64, **options), _Flat(), max_context=4096)


def test_a_step_of_a_given_shape_is_scaled_and_any_other_is_at_its_plain_price() -> None:
    known = StepFeatures(decode_seqs=2, decode_context=2 * 300)  # decode:2:1
    unknown = StepFeatures(decode_seqs=2, decode_context=2 * 600)  # decode:2:2
    prefill = StepFeatures(prefill_tokens=100, decode_seqs=0)  # prefill:7:0
    engine = _engine(step_scale=1.5, step_scale_shapes=SHAPES)
    assert [engine.step_duration(f) for f in (known, unknown, prefill)] == [0.01 * 1.5, 0.01, 0.01 * 1.5]
    assert [engine.expected_step_s(f) for f in (known, unknown)] == [0.01 * 1.5, 0.01]  # the guard prices alike
    every = _engine(step_scale=1.5)  # None: every step, as before the option
    assert [every.step_duration(f) for f in (known, unknown, prefill)] == [0.01 * 1.5] * 3
    assert _engine(step_scale=1.0, step_scale_shapes=SHAPES).step_duration(known) == 0.01


def _run(spec: str, decode_runs: bool, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[bytes, list[dict]]:
    """(records, step trace) of `schedule()` on `spec`, with `options` set on the built engine's SimOptions."""
    monkeypatch.setattr(SimEngine, "decode_runs", decode_runs)
    (parsed,) = parse_engine_specs([spec], {})
    engine = build_engine(parsed, None)
    assert isinstance(engine, SimEngine)
    engine.options = dataclasses.replace(engine.options, **options)
    steps: list[bytes] = []
    engine.set_step_sink(lambda record: steps.append(orjson.dumps(record)))
    records: list[bytes] = []
    run_virtual_open_loop(engine, schedule(), lambda r: records.append(orjson.dumps(r.to_json())), label="e")
    return b"\n".join(records), [orjson.loads(s) for s in steps]


def _features(step: dict) -> StepFeatures:
    return StepFeatures(*(int(step[TRACE_FIELDS[name]]) for name in FEATURE_NAMES))


def test_each_step_of_a_run_is_priced_by_its_own_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step of a run with decode runs (on the roofline's arrays) lasts its plain price times the scale where
    its shape is given, and its plain price elsewhere; both happen, within decode runs too."""
    _, steps = _run(ROOFLINE, True, monkeypatch, step_scale=1.25, step_scale_shapes=SHAPES)
    cost = build_engine(parse_engine_specs([ROOFLINE], {})[0], None).cost
    scaled = [shape_key(_features(s)) in SHAPES for s in steps]
    want = [cost.step_time(_features(s)) * (1.25 if on else 1.0) for s, on in zip(steps, scaled, strict=True)]
    assert [s["t_end"] - s["t_start"] for s in steps] == pytest.approx(want, rel=1e-9)
    decode = [on for s, on in zip(steps, scaled, strict=True) if s["phase"] == "decode"]
    assert any(decode) and not all(decode)


@pytest.mark.parametrize(
    ("spec", "shapes"),
    [
        (ROOFLINE, SHAPES),  # the decode run's array path
        # the decode run's step-by-step clock: a fitted profile's noise, its own measured shapes
        (f"sim:profile={PROFILE},seed=7,max_running=8", None),
        (f"sim:profile={PROFILE},seed=7,scheduler=static,max_batch=8", None),  # held slots' pad rows
    ],
)
def test_decode_runs_write_what_the_step_by_step_loop_writes_with_the_shapes(
    spec: str, shapes: frozenset[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = {"step_scale_shapes": shapes} if shapes else {}
    spec += "" if shapes else ",step_scale_shapes=measured"
    records, steps = _run(spec + ",step_scale=1.3", False, monkeypatch, **given)
    fast_records, fast_steps = _run(spec + ",step_scale=1.3", True, monkeypatch, **given)
    assert fast_records == records and fast_steps == steps
    _, every = _run(spec.removesuffix(",step_scale_shapes=measured") + ",step_scale=1.3", True, monkeypatch)
    _, plain = _run(spec.removesuffix(",step_scale_shapes=measured"), True, monkeypatch)
    assert steps != every and steps != plain  # the shapes took some steps out of the scale, not all


def test_unset_or_all_is_every_step_scaled_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = f"sim:profile={PROFILE},seed=3,max_running=8,step_scale=1.2"
    (parsed,) = parse_engine_specs([spec], {})
    assert build_engine(parsed, None).options.step_scale_shapes is None
    assert _run(spec, True, monkeypatch) == _run(spec + ",step_scale_shapes=all", True, monkeypatch)
    measured = build_engine(parse_engine_specs([spec + ",step_scale_shapes=measured"], {})[0], None)
    levels = orjson.loads(PROFILE.read_bytes())["fit"]["shape_levels"]
    assert measured.options.step_scale_shapes == frozenset(levels)


@pytest.mark.parametrize(
    "spec",
    [
        "sim:step_scale=1.2,step_scale_shapes=some",  # not a choice
        "sim:step_scale=1.2,step_scale_shapes=measured",  # the roofline: no fit run measured a shape
        f"sim:profile={Path(__file__).parents[1] / 'fixtures' / 'sim_fidelity' / 'profile.json'},"
        "step_scale_shapes=measured",  # a profile fitted before it kept shape levels
    ],
)
def test_a_bad_shapes_value_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    assert main([*RUN, "--engine", spec, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step_scale_shapes" in err and "Traceback" not in err, err
