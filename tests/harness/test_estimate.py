"""A run says how long it will take, and which engine it will drown, before it starts (issue #32)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from harness import estimate
from harness.engine_specs import parse_engine_specs

SPEED = estimate.EngineSpeed(prefill_tok_s=1000.0, decode_tok_s=100.0, source="test")


def workload(n: int, span_s: float, prompt: int = 100, output: int = 10) -> SimpleNamespace:
    times = np.linspace(0.0, span_s, n)
    return SimpleNamespace(
        requests=[SimpleNamespace(arrival_s=t, input_tokens=prompt, output_tokens=output) for t in times]
    )


def specs(*texts: str) -> list:
    return parse_engine_specs(list(texts), {})


def test_work_within_the_span_takes_the_span_and_trials_multiply() -> None:
    # 10 requests: 1000 prompt tokens (1 s) + 100 output tokens (1 s) = 2 s of work over a 20 s span
    one = estimate.estimate_engine(specs("continuous")[0], workload(10, 20.0).requests, 20.0, False, SPEED, None)
    assert one.seconds == pytest.approx(20.0) and one.load == pytest.approx(0.1)
    lines = estimate.estimate_run(workload(10, 20.0), specs("continuous"), "open", 3, None, SPEED)
    assert "about 60 s of replay" in lines[0] and not any("!" in line for line in lines)


def test_an_overloaded_engine_is_warned_with_a_stop_and_a_rate_that_fits() -> None:
    # 100 requests of 10 s work each... 100 x (0.1 + 0.1) s = 20 s of work over a 4 s span: load 5x
    lines = estimate.estimate_run(workload(100, 4.0), specs("continuous"), "open", 1, None, SPEED)
    assert "about 20 s" in lines[0]
    warning = next(line for line in lines if "!" in line)
    assert "5.0x" in warning and "--stop-run-s 14" in warning and "--rate 5" in warning
    # with --stop-run-s given, the estimate is bounded by it and the warning stops suggesting it
    lines = estimate.estimate_run(workload(100, 4.0), specs("continuous"), "open", 1, 6.0, SPEED)
    assert "about 6 s" in lines[0] and "--stop-run-s" not in next(line for line in lines if "!" in line)


def test_static_batching_is_charged_for_its_longest_member() -> None:
    outputs = np.array([1.0, 9.0, 2.0, 2.0])
    assert estimate.padded_outputs(outputs, 2) == 2 * 9 + 2 * 2
    work = workload(4, 100.0)
    for r, n in zip(work.requests, outputs, strict=True):
        r.output_tokens = int(n)
    static, cont = (
        estimate.estimate_engine(s, work.requests, 100.0, True, SPEED, None)
        for s in specs("static:max_batch=2", "continuous")
    )
    assert static.seconds == pytest.approx(0.4 + 22 / 100) and cont.seconds == pytest.approx(0.4 + 14 / 100)


def test_kinds_without_a_speed_say_what_they_cannot_tell() -> None:
    lines = estimate.estimate_run(workload(10, 30.0), specs("zero", "sim"), "open", 2, None, None)
    assert "about 60 s of replay, plus sim-continuous" in lines[0]
    assert any("virtual time (not wall time)" in line for line in lines)
    http = parse_engine_specs(["http:url=http://127.0.0.1:9"], {})
    lines = estimate.estimate_run(workload(10, 30.0), http, "open", 1, None, None)
    assert "cannot tell" in lines[0] and "speed is unknown" in lines[1]


def test_the_demo_calibration_is_kept_and_read_back(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert "conservative default" in estimate.load_speed(None, "float32").source
    assert estimate.load_speed(str(tmp_path), "float32") is None  # another model: no default to assume
    estimate.save_speed(None, "float32", 1234.0, 567.0)
    speed = estimate.load_speed(None, "float32")
    assert (speed.prefill_tok_s, speed.decode_tok_s) == (1234.0, 567.0) and "calibration" in speed.source
    estimate.speed_cache(None, "float32").write_text('{"prefill_tok_s": -1, "decode_tok_s": "x"}')
    assert "conservative default" in estimate.load_speed(None, "float32").source  # a bad cache is ignored


def test_a_sweep_of_given_rates_sums_its_runs() -> None:
    # two rates, each 10 requests over 20 s well within capacity: 2 x 20 s x 2 trials; sim adds no wall time
    line = estimate.estimate_sweep([workload(10, 20.0)] * 2, specs("continuous", "sim"), 2, None, SPEED)
    assert line.startswith("estimate: 2 rate(s) x 2 engine(s) x 2 trial(s): about 80 s of replay, plus sim-continuous")
    assert "cannot tell" in estimate.estimate_sweep([workload(10, 20.0)], specs("sim"), 1, None, None)
