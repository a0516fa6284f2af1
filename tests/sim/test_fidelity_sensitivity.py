"""`sim fidelity --sensitivity F`: the same seeded twins at step price x(1-F) and x(1+F), each latency's elasticity
to the price, and a flag on the metrics on a tipping point (harness/metrics/sensitivity.py). Judged on the tenth
suite's committed runs: hol-blocking-static near capacity, hol-blocking-continuous well below it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.metrics.sensitivity import TIPPING, elasticity, sensitivity_block, sensitivity_text
from tests.sim.test_cluster_twin import PROFILE, router_run

V10 = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite_v10"
RUNS = V10 / "runs"


def _summary(ttft: float, tpot: float) -> dict:
    def p(value: float) -> dict:
        return {"percentiles": {"p50": {"value": value}, "p99": {"value": 2 * value}}}

    return {"latency": {"ttft": p(ttft), "tpot": p(tpot), "e2e": p(ttft + 10 * tpot)}}


def test_the_elasticity_is_the_relative_move_per_relative_move_of_the_price() -> None:
    assert elasticity(0.9, 1.0, 1.1, 0.1) == pytest.approx(1.0)  # in proportion
    assert elasticity(0.072, 0.72, 2.61, 0.1) == pytest.approx((2.61 - 0.072) / 0.72 / 0.2)  # v10's 17.6
    assert elasticity(2.0, 2.0, 2.0, 0.2) == 0.0
    assert elasticity(1.2, 1.0, 0.8, 0.1) == pytest.approx(-2.0)
    assert elasticity(None, 1.0, 1.1, 0.1) is None and elasticity(0.9, 0.0, 1.1, 0.1) is None
    assert elasticity(0.9, None, 1.1, 0.1) is None and elasticity(0.9, 1.0, None, 0.1) is None


def test_a_metric_moving_more_than_three_times_the_price_is_flagged_on_its_twins_medians() -> None:
    plain = [_summary(1.0, 0.010), _summary(1.2, 0.011), _summary(0.8, 0.009)]  # medians 1.0 s, 10 ms
    scaled = {0.9: [_summary(0.5, 0.009)], 1.1: [_summary(1.5, 0.011)]}  # TTFT x0.5 .. x1.5: elasticity 5
    block = sensitivity_block(0.1, plain, lambda scale: scaled[round(scale, 6)])
    by = {m["metric"]: m for m in block["metrics"]}
    assert list(by) == ["TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99"]  # latencies only
    assert (by["TTFT p50"]["scaled_down"], by["TTFT p50"]["plain"], by["TTFT p50"]["scaled_up"]) == (0.5, 1.0, 1.5)
    assert by["TTFT p50"]["elasticity"] == pytest.approx(5.0) and by["TTFT p50"]["tipping"]
    assert by["TPOT p50"]["elasticity"] == pytest.approx(1.0) and not by["TPOT p50"]["tipping"]
    assert by["E2E p50"]["elasticity"] == pytest.approx((1.61 - 0.59) / 1.1 / 0.2) and by["E2E p50"]["tipping"]
    assert block["fraction"] == 0.1 and block["threshold"] == TIPPING == 3.0
    text = sensitivity_text(block)
    assert "TTFT p50 5.00" in text and "TPOT p50 1.00" in text
    assert "on a tipping point (|elasticity| > 3): a price error of 10% moves TTFT p50 by 50% (0.5, 1, 1.5 s), " in text
    assert "TPOT p50 by" not in text


def _fidelity(tmp_path: Path, pair: str, profile: str, *extra: str) -> tuple[str, dict]:
    out = tmp_path / f"{pair}.json"
    argv = ["sim", "fidelity", str(RUNS / pair), "--profile", str(RUNS / profile), "--json", str(out), *extra]
    assert main(argv) == 0
    return out.read_text(), json.loads(out.read_text())[0]


def test_the_static_engine_near_capacity_is_on_a_tipping_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, entry = _fidelity(tmp_path, "hol-blocking-static", "profile-static.json", "--sensitivity", "0.1")
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("SENSITIVITY:")]
    by = {m["metric"]: m for m in entry["sensitivity"]["metrics"]}
    ttft = by["TTFT p50"]
    assert (round(ttft["scaled_down"], 3), round(ttft["plain"], 2), round(ttft["scaled_up"], 2)) == (0.072, 0.72, 2.61)
    assert ttft["tipping"] and ttft["elasticity"] > 10
    assert len(lines) == 1 and lines[0].startswith("SENSITIVITY: static: step price x0.9 and x1.1")
    assert "> 3): a price error of 10% moves TTFT p50 by 176% (0.0718, 0.72, 2.61 s)" in lines[0]


def test_the_continuous_engine_below_capacity_moves_in_proportion_to_the_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain_json, plain = _fidelity(tmp_path, "hol-blocking-continuous", "profile-continuous.json")
    plain_out = capsys.readouterr().out
    _, entry = _fidelity(tmp_path, "hol-blocking-continuous", "profile-continuous.json", "--sensitivity", "0.1")
    out = capsys.readouterr().out
    by = {m["metric"]: m for m in entry["sensitivity"]["metrics"]}
    assert 0.6 <= by["TPOT p50"]["elasticity"] <= 1.5 and not by["TPOT p50"]["tipping"]  # 1.16 measured
    assert 0.6 <= by["TTFT p50"]["elasticity"] <= 1.5 and not by["TTFT p50"]["tipping"]  # 0.81 measured
    assert not any(m["tipping"] for m in by.values()) and "tipping" not in out
    assert out.startswith(plain_out) and out[len(plain_out) :].startswith("SENSITIVITY: continuous: ")
    assert {k: v for k, v in entry.items() if k != "sensitivity"} == plain  # the table itself unchanged
    assert "sensitivity" not in plain_json


@pytest.mark.parametrize("value", ["0", "-0.1", "0.51", "nan", "inf", "half"])
def test_a_fraction_outside_zero_to_a_half_is_one_line_before_any_twin(value: str) -> None:
    argv = ["sim", "fidelity", str(RUNS / "hol-blocking-static"), "--profile", str(RUNS / "profile-static.json")]
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv, f"--sensitivity={value}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--sensitivity" in done.stderr and f"expected a fraction in (0, 0.5], got {value!r}" in done.stderr


def test_the_suite_reports_it_under_each_pair_and_no_verdict_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head, *blocks = (V10 / "suite.toml").read_text().split("[[pairs]]\n")
    pairs = ("hol-blocking-static", "hol-blocking-continuous")
    kept = [b for b in blocks if any(f'name = "{name}"\n' in b for name in pairs)]
    assert len(kept) == 2
    suite = tmp_path / "suite.toml"
    suite.write_text(head + "".join(f"[[pairs]]\n{b}" for b in kept))
    argv = ["sim", "fidelity", "--suite", str(suite), "--runs", str(RUNS), "--seeds", "2"]
    assert main([*argv, "--json", str(tmp_path / "plain.json")]) == 0
    plain_out = capsys.readouterr().out
    assert main([*argv, "--json", str(tmp_path / "sens.json"), "--sensitivity", "0.1"]) == 0
    out = capsys.readouterr().out
    plain, sens = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("plain", "sens"))
    for p in sens["pairs"]:
        assert p.pop("sensitivity")["fraction"] == 0.1
    assert sens == plain  # every verdict, error and count as without it
    added = [x for x in out.splitlines() if x not in plain_out.splitlines()]
    assert len(added) == 3 and added[-1].startswith("sensitivity: each latency's elasticity to the step price")
    static, continuous = added[:2]
    assert static.startswith("  sensitivity x(1+-0.1): TTFT p50 ") and "; on a tipping point: TTFT p50" in static
    assert continuous.startswith("  sensitivity x(1+-0.1): TTFT p50 ") and "tipping" not in continuous
    assert out.index(static) < out.index("hol-blocking-continuous") < out.index(continuous)


def test_a_router_s_cluster_twin_prices_its_replicas_steps_at_each_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, out = router_run(tmp_path, "power_of_two"), tmp_path / "fleet.json"
    argv = ["sim", "fidelity", str(run), "--profile", str(PROFILE), "--seeds", "2", "--sensitivity", "0.2"]
    assert main([*argv, "--json", str(out)]) == 0
    (entry,) = json.loads(out.read_text())
    by = {m["metric"]: m for m in entry["sensitivity"]["metrics"]}
    assert by["TPOT p50"]["scaled_down"] < by["TPOT p50"]["plain"] < by["TPOT p50"]["scaled_up"]
    assert 0.6 <= by["TPOT p50"]["elasticity"] <= 1.5  # 0.81 measured: the replicas' steps, not a fixed fleet
    assert "SENSITIVITY: fleet: step price x0.8 and x1.2" in capsys.readouterr().out
