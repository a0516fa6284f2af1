"""Calibration: A/A pairs count false alarms, slowdown pairs count detections; pairs alternate and the
engines' order alternates across trials. Logic on synthetic runs; one tiny real pair on the embedded model."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from engines import engine_core
from engines.api import Request
from engines.block_manager import BlockManager
from engines.engine_core import EngineCore
from engines.policy import make_policy
from engines.scheduler import ContinuousConfig, ContinuousScheduler
from engines.sequence import Sequence
from harness.calibrate import calibrate
from harness.engine_specs import parse_engine_specs
from harness.gate import GateConfig, rules_from_texts
from harness.gate.calibration import PLAN_ASSURANCE, CalibrationPlan, PairResult, noise, summary, trials_needed
from harness.jsonl import JsonlWriter
from tests.fixtures.gate_runs import synthetic_run


class FakeReplay:
    """Writes synthetic records instead of running engines; a slowdown option slows that side down."""

    def __init__(self) -> None:
        self.orders: list[list[str]] = []

    def __call__(self, workload, specs, run_dir):
        self.orders.append([s.label for s in specs])
        with JsonlWriter(run_dir / "records.jsonl") as out:
            for n, spec in enumerate(specs):
                speed = 1.0 + spec.options.get("slowdown", 0.0)
                for record in synthetic_run(
                    1000 * workload + 10 * len(self.orders) + n,
                    n=80,
                    speed=speed,
                    schedule_seed=workload,
                    engine=spec.label,
                ):
                    out.write(record)


def test_calibration_counts_false_alarms_and_detections(tmp_path):
    replay = FakeReplay()
    # two trials are below auto's min_trials: judge requests, which the synthetic runs draw independently
    config = GateConfig(rules=rules_from_texts(["tpot.p50 <= +5%"]), unit="request")
    plan = CalibrationPlan(pairs=6, slowdown=0.15, trials=2, seed=40)
    spec = parse_engine_specs(["continuous"], {})[0]
    lines: list[str] = []
    data = calibrate(plan, spec, config, load=lambda seed: seed, run_one=replay, out=tmp_path, log=lines.append)
    s = data["summary"]
    assert s["false_alarm"] == {"failed": 0, "pairs": 6, "rate": 0.0, "ci95": pytest.approx([0.0, 0.459], abs=1e-3)}
    assert s["detection"]["failed"] == 6 and s["detection"]["rate"] == 1.0
    assert s["outcome"] == "cannot tell" and not s["met"]  # 0/6 false alarms: CI up to 46%, not inside 5%
    assert [p["kind"] for p in data["pairs"]] == ["aa", "slowdown"] * 6  # interleaved: drift hits both kinds
    assert [p["seed"] for p in data["pairs"]][:4] == [40, 40, 41, 41]  # a fresh schedule per pair
    assert replay.orders[0] == ["baseline", "candidate"] and replay.orders[1] == ["candidate", "baseline"]  # ABBA
    assert json.loads((tmp_path / "calibration.json").read_text())["summary"]["outcome"] == "cannot tell"
    assert (tmp_path / "slowdown-05" / "t1" / "records.jsonl").is_file() and len(lines) == 12


def test_missed_targets_are_reported():
    plan = CalibrationPlan(pairs=2, max_false_alarm=0.05, min_detection=0.95)
    outcomes = [("aa", True), ("aa", False), ("slowdown", True), ("slowdown", True)]
    results = [PairResult(kind, i % 2, i % 2, failed, 1.0, 0.0, []) for i, (kind, failed) in enumerate(outcomes)]
    s = summary(plan, results)
    assert s["false_alarm"]["rate"] == 0.5 and s["detection"]["rate"] == 1.0 and not s["met"]


def _results(aa_failed: int, slow_failed: int, pairs: int) -> list[PairResult]:
    made = [("aa", i < aa_failed) for i in range(pairs)] + [("slowdown", i < slow_failed) for i in range(pairs)]
    return [PairResult(kind, i, i, failed, 1.0, 0.0, []) for i, (kind, failed) in enumerate(made)]


@pytest.mark.parametrize(
    ("aa_failed", "slow_failed", "pairs", "expected"),
    [
        (0, 2, 2, "cannot tell"),  # the repro: 0/2 (CI 0-84%) and 2/2 (CI 16-100%) prove nothing
        (0, 100, 100, "met"),  # 0/100 (CI 0-3.6%) and 100/100 (CI 96.4-100%) lie inside both targets
        (30, 100, 100, "missed"),  # 30% false alarms: the whole interval lies above 5%
        (0, 50, 100, "missed"),  # half detected: the whole interval lies below 95%
    ],
)
def test_met_only_when_both_intervals_lie_inside_the_targets(aa_failed, slow_failed, pairs, expected):
    plan = CalibrationPlan(pairs=pairs, max_false_alarm=0.05, min_detection=0.95)
    s = summary(plan, _results(aa_failed, slow_failed, pairs))
    assert s["outcome"] == expected and s["met"] == (expected == "met")


class FakeClock:
    """A clock that moves only when told to, plus a tick per reading, so the spin loop ends."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1e-6
        return self.now


class FixedRunner:
    """A model step that takes exactly 4 ms on the fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def execute(self, plan):
        self.clock.now += 0.004
        return [5 for c in plan.chunks if c.yields_token and c.num_tokens]


def step_times(slowdown: float) -> list[float]:
    clock = FakeClock()
    blocks = BlockManager(64, 16)
    scheduler = ContinuousScheduler(ContinuousConfig(max_running=4), make_policy("fcfs"), blocks, eos=None)
    core = EngineCore(
        scheduler,
        FixedRunner(clock),
        blocks_total=lambda: 64,
        blocks_used=lambda: blocks.num_used,
        slowdown=slowdown,
        clock=clock,
    )
    for i in range(4):
        scheduler.enqueue(Sequence.from_request(Request(f"r{i}", [3] * 8, 20, ignore_eos=True), i, 0.0))
    durations: list[float] = []
    core.step_sink = lambda step: durations.append(step.t_end - step.t_start)
    while scheduler.has_work():
        core.step()
    return durations


def test_the_engine_slowdown_option_lengthens_every_step_by_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    # the slowdown's wait yields with time.sleep(0) between clock readings: real time (~60 us a yield, 2,000 of
    # them a step on the fake clock's 1 us ticks: 2.4 s), which the fake clock never sees; the wait itself,
    # read by reading the clock, is what this test measures. Only the engine loop's `time` is replaced.
    monkeypatch.setattr(engine_core, "time", SimpleNamespace(sleep=lambda seconds: None))
    base, slow = step_times(0.0), step_times(0.5)
    assert len(base) == len(slow) == 20
    for b, s in zip(base, slow, strict=True):
        assert s / b == pytest.approx(1.5, rel=0.01), (b, s)


def _detection_by_simulation(effect: float, threshold: float, sd: float, alpha: float, n: int) -> float:
    """The gate's trial rule applied to simulated paired trials: an independent check of `trials_needed`."""
    rng = np.random.default_rng(n)
    d = rng.normal(effect, sd, size=(20_000, n))
    mean, se = d.mean(1), d.std(1, ddof=1) / np.sqrt(n)
    return float((mean - stats.t.ppf(1.0 - alpha, n - 1) * se > threshold).mean())  # the interval's lower end


@pytest.mark.parametrize(("effect", "sd", "alpha"), [(0.12, 0.10, 0.01), (0.12, 0.10, 0.05), (0.2, 0.05, 0.05)])
def test_trials_needed_is_the_fewest_that_catch_the_change_95_percent_of_the_time(effect, sd, alpha):
    threshold = float(np.log(1.05))
    n = trials_needed(effect, threshold, sd, alpha)
    assert n is not None and n >= 3
    assert _detection_by_simulation(effect, threshold, sd, alpha, n) >= 0.94
    if n > 4:
        assert _detection_by_simulation(effect, threshold, sd, alpha, n - 2) < 0.95
    assert trials_needed(effect, threshold, 2 * sd, alpha) > n  # noisier machine, more trials


def test_trials_needed_is_none_for_a_change_within_the_threshold():
    assert trials_needed(0.04, 0.05, 0.01, 0.05) is None
    assert trials_needed(0.1, 0.05, 0.0, 0.05) is None
    assert trials_needed(0.0501, 0.05, 0.5, 0.05, most=50) is None


def test_calibration_reports_the_noise_and_the_trials_a_gate_needs(tmp_path):
    config = GateConfig(rules=rules_from_texts(["tpot.p50 <= +5%"]))
    plan = CalibrationPlan(pairs=3, slowdown=0.15, trials=4, seed=7)
    spec = parse_engine_specs(["continuous"], {})[0]
    data = calibrate(plan, spec, config, load=lambda seed: seed, run_one=FakeReplay(), out=tmp_path, log=print)
    (noise,) = data["noise"]
    assert noise["rule"] == "tpot.p50 <= +5%" and noise["scale"] == "log ratio" and noise["trial_sd"] > 0
    assert noise["slowdown_mean_change"] == pytest.approx(0.15, abs=0.05) and abs(noise["aa_mean_change"]) < 0.05
    naive = trials_needed(np.log1p(noise["slowdown_mean_change"]), np.log(1.05), noise["trial_sd"], config.alpha)
    assert noise["trials_naive"] == naive and noise["slowdown_past_threshold"]
    planned = trials_needed(
        np.log1p(noise["slowdown_change_bound"]), np.log(1.05), noise["trial_sd_bound"], config.alpha
    )
    assert noise["trials_for_95pct_detection"] == planned
    assert (
        noise["slowdown_change_bound"] < noise["slowdown_mean_change"]
        and noise["trial_sd_bound"] > noise["trial_sd_pooled"]
    )
    assert all(x["trial_sd"] is not None for p in data["pairs"] for x in p["rules"])


@pytest.mark.parametrize(
    ("statuses", "failed", "word"),
    [
        (["pass"], False, "pass"),
        (["pass", "inconclusive"], False, "cannot tell"),
        (["no_data"], False, "cannot tell"),
        (["fail", "inconclusive"], True, "FAIL"),
    ],
)
def test_a_pair_line_says_cannot_tell_as_the_gate_would(statuses, failed, word):
    """Three outcomes in calibrate's pair lines too: a pair whose gate cannot tell did not pass (exit 3)."""
    rows = [{**_row(0.0, 0.1), "status": s} for s in statuses]
    assert PairResult("aa", 0, 0, failed, 0.0, 0.0, rows).word == word


def test_the_header_says_the_gate_cannot_tell_with_fewer_trials_than_it_judges(tmp_path, capsys):
    from harness.cli import main

    out = tmp_path / "cal"
    argv = ["calibrate", "--workload", "chat-small", "--requests", "8", "--engine", "sim", "--pairs", "1"]
    main([*argv, "--trials", "2", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "the gate cannot tell a change rule: 2 trial(s) per side show no run-to-run noise" in printed
    assert "the gate judges" not in printed and ": cannot tell  tpot.p50" in printed


def _row(change: float, trial_sd: float) -> dict:
    return {
        "rule": "tpot.p50 <= +5%",
        "status": "pass",
        "change": change,
        "p_value": None,
        "trial_sd": trial_sd,
        "threshold_kind": "relative",
        "threshold": 0.05,
    }


def _pilot(rng: np.random.Generator, effect: float, sd: float, pairs: int, trials: int) -> list[PairResult]:
    """A simulated pilot: `pairs` A/A and slowdown pairs of `trials` normal trial changes (log scale)."""
    out = []
    for i in range(pairs):
        for kind, mean in (("aa", 0.0), ("slowdown", effect)):
            d = rng.normal(mean, sd, trials)
            out.append(PairResult(kind, i, i, False, 0.0, 0.0, [_row(float(np.expm1(d.mean())), float(d.std(ddof=1)))]))
    return out


def _power(n: int, gap: float, sd: float, alpha: float) -> float:
    """The gate's exact detection probability with n normal trials: its t-interval's lower end past the
    threshold (the same rule `_detection_by_simulation` draws)."""
    return float(stats.nct.sf(stats.t.ppf(1.0 - alpha, n - 1), n - 1, gap * np.sqrt(n) / sd))


def test_planned_trials_deliver_the_power_in_the_stated_share_of_pilots_and_naive_ones_do_not():
    effect, sd, alpha, pairs, trials = float(np.log(1.12)), 0.10, 0.01, 8, 8
    gap = effect - float(np.log(1.05))
    rng = np.random.default_rng(31)
    planned, naive = [], []
    for _ in range(120):
        (got,) = noise(_pilot(rng, effect, sd, pairs, trials), alpha, trials)
        planned.append(_power(got["trials_for_95pct_detection"], gap, sd, alpha) >= 0.95)
        naive.append(got["trials_naive"] is not None and _power(got["trials_naive"], gap, sd, alpha) >= 0.95)
    assert np.mean(planned) >= PLAN_ASSURANCE, np.mean(planned)
    assert np.mean(naive) < 0.65, np.mean(naive)  # the pilot's point estimates: about a coin flip


def test_a_plan_needs_two_slowdown_pairs_and_an_effect_bound_past_the_threshold():
    rng = np.random.default_rng(3)
    (one,) = noise(_pilot(rng, float(np.log(1.5)), 0.05, 1, 8), 0.01, 8)
    assert one["trials_naive"] is not None and one["trials_for_95pct_detection"] is None
    assert one["plan_note"] == "cannot plan: one slowdown pair does not bound its effect"
    wide = [
        PairResult(kind, i, i, False, 0.0, 0.0, [_row(change, 0.3)])
        for i, change in enumerate((0.30, -0.10, 0.0))
        for kind in ("aa", "slowdown")
    ]
    (close,) = noise(wide, 0.01, 4)  # slowdown +6% on average, but -10% to +30% from pair to pair
    assert close["slowdown_past_threshold"] and close["trials_for_95pct_detection"] is None
    assert close["plan_note"] == "cannot plan: the pilot's lower bound on the slowdown is within the threshold"
