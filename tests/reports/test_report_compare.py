"""Comparisons: paired (Wilcoxon signed-rank) on the same schedule, by distribution (Mann-Whitney U, KS)
otherwise; Holm adjustment; the verdict's intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from harness.judge.headline import Headline
from harness.judge.tests import holm
from harness.metrics.intervals import Estimate, batch_means, wilson
from reports import fmt
from reports.analysis import analyse
from reports.compare import compare, plan
from reports.load import load_runs
from reports.verdict import cell


@pytest.fixture(scope="module")
def runs(run_dir: Path, after_dir: Path, other_schedule_dir: Path):
    return load_runs([run_dir, after_dir, other_schedule_dir], ["before", "after", "other"])


def _engine(runs, label: str):
    return next(er for run in runs for er in run.engine_runs if er.label == label)


def test_plan_pairs_engines_within_and_across_runs(runs) -> None:
    pairs = [(a.label, b.label) for a, b in plan(runs)]
    assert ("before/static", "before/continuous") in pairs  # within a run, static is the baseline
    assert ("before/continuous", "after/continuous") in pairs  # before/after
    assert ("before/static", "after/static") in pairs
    assert ("before/continuous", "other/continuous") in pairs


def test_same_schedule_is_paired_and_matches_scipy(runs) -> None:
    a, b = _engine(runs, "before/static"), _engine(runs, "before/continuous")
    c = compare(a, b)
    assert c.kind == "paired"
    assert "same schedule" in c.reason
    # The Wilcoxon p-value is scipy's on the per-request TTFT differences.
    la, lb = a.latencies.set_index("request_id"), b.latencies.set_index("request_id")
    d = (lb["ttft"] - la["ttft"]).dropna().to_numpy()
    assert c.table.loc["ttft", "p_value"] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-9, abs=1e-300)
    assert c.table.loc["ttft", "delta"] == pytest.approx(np.median(d))
    assert c.table.loc["ttft", "verdict"] == "b lower"
    assert c.table.loc["ttft", "ci_low"] <= c.table.loc["ttft", "delta"] <= c.table.loc["ttft", "ci_high"]


def test_regressed_scheduler_is_detected(runs) -> None:
    c = compare(_engine(runs, "before/continuous"), _engine(runs, "after/continuous"))
    assert c.kind == "paired"
    assert c.table.loc["tpot", "verdict"] == "b higher"  # 30% slower steps
    assert c.table.loc["tpot", "rel_change"] == pytest.approx(0.3, abs=0.08)


def test_identical_runs_show_no_difference(runs) -> None:
    er = _engine(runs, "before/continuous")
    c = compare(er, er)
    assert c.kind == "paired"
    assert (c.table["verdict"] == "no significant difference").all()
    assert (c.table["p_value"] == 1.0).all()


def test_different_schedules_are_compared_by_distribution(runs) -> None:
    a, b = _engine(runs, "before/continuous"), _engine(runs, "other/continuous")
    c = compare(a, b)
    assert c.kind == "unpaired"
    assert c.test_name == "Mann-Whitney U and Kolmogorov-Smirnov"
    va = a.latencies["e2e"].dropna().to_numpy()
    vb = b.latencies["e2e"].dropna().to_numpy()
    assert c.table.loc["e2e", "p_value"] == pytest.approx(stats.mannwhitneyu(va, vb).pvalue)
    assert c.table.loc["e2e", "ks_p_value"] == pytest.approx(stats.ks_2samp(va, vb).pvalue)
    assert c.table.loc["e2e", "delta"] == pytest.approx(np.median(vb) - np.median(va))


def test_holm_adjustment() -> None:
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.2])
    adjusted = holm(p)
    # sorted: 0.01*4, 0.03*3, 0.04*2, 0.2*1 -> monotone: 0.04, 0.09, 0.09, 0.2
    np.testing.assert_allclose(adjusted, [0.04, 0.09, 0.09, np.nan, 0.2])


def test_wilson_and_batch_means() -> None:
    e = wilson(45, 50)
    assert e.low < 0.9 < e.high and 0.78 < e.low < 0.8
    assert wilson(50, 50).high == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 100, 50_000))
    est = batch_means(times, 0.0, 100.0)
    assert est.value == pytest.approx(500, rel=0.01)
    assert est.low < 500 < est.high


def test_headline_decisions() -> None:
    clear = Headline("x", "x", "lower", "seconds", {"a": Estimate(1.0, 0.9, 1.1), "b": Estimate(2.0, 1.8, 2.2)})
    clear.decide()
    assert clear.winner == "a" and clear.clear and clear.margin == "2.00x"
    close = Headline("x", "x", "higher", "rate", {"a": Estimate(1.0, 0.5, 1.5), "b": Estimate(1.2, 0.9, 1.6)})
    close.decide()
    assert close.winner == "b" and not close.clear
    point = Headline("usd", "usd", "lower", "usd", {"a": Estimate(3.0), "b": Estimate(2.0)})
    point.decide()
    assert point.winner == "b" and point.point_only and not point.clear


def test_a_lower_bound_can_lose_clearly_but_never_win_clearly() -> None:
    # static's TTFT p99 is at least 16 s (requests cut off while waiting reach it): its upper end is unknown
    loses = Headline(
        "p99", "p99", "lower", "seconds", {"c": Estimate(5.8, 2.5, 5.9), "s": Estimate(16.1, 12.3, None, at_least=True)}
    )
    loses.decide()
    assert loses.winner == "c" and loses.clear and loses.margin == "at least 2.78x"
    assert cell(loses.estimates["s"], fmt.seconds) == "≥ 16.1 s [12.3 s, unknown]"
    ahead = Headline(
        "p99",
        "p99",
        "lower",
        "seconds",
        {"c": Estimate(20.0, 18.0, 22.0), "s": Estimate(16.1, 12.3, None, at_least=True)},
    )
    ahead.decide()
    assert ahead.winner == "s" and not ahead.clear  # its true value may lie anywhere above 16.1 s
    overlap = Headline(
        "p99",
        "p99",
        "lower",
        "seconds",
        {"c": Estimate(5.8, 2.5, 13.0), "s": Estimate(16.1, 12.3, None, at_least=True)},
    )
    overlap.decide()
    assert overlap.winner == "c" and not overlap.clear


def test_verdict_and_flags(run_dir: Path) -> None:
    a = analyse(run_dir)
    assert a.verdict.lines[0].startswith("continuous wins")
    names = {(f["series"], f["name"]) for f in a.verdict.flags}
    assert ("static", "failed_requests") in names  # 1% of static's requests time out in the fixture
    heads = {h.key: h for h in a.verdict.headlines}
    assert heads["ttft_p99"].winner == "continuous" and heads["ttft_p99"].clear
