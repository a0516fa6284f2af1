"""A study flags what its numbers cannot say: variants that change no request's treatment, and arms that
never reached the SLO's region; its report renders the verdict without raw escapes, and a reference arm
never wins a metric (docs/study.md)."""

from __future__ import annotations

import contextlib
import io
import json
from html import escape as html_escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.cli import main
from harness.study.guards import study_flags
from harness.study.metrics import Metric
from harness.study.plan import load_plan
from harness.study.variants import resolve
from harness.study.verdict import wins
from workloads.model import Workload, WorkloadRequest


def _plan(decision: str, *variants: str) -> str:
    """A plan on chat-small (one tenant, every priority 0) over a simulated fcfs baseline, SLO 2 s."""
    body = "".join(f"[[variants]]\n{v}\n" for v in variants)
    return f"""decision = "{decision}"
workload = "chat-small"
slo_ttft_ms = 2000
[baseline]
engine = "sim:policy=fcfs"
{body}[[metrics]]
name = "ttft.p99"
[slices]
tuning = [0, 2]
held_out = [2, 4]
"""


# 2 req/s on a simulated H100: nothing a queue order can act on, and nowhere near the SLO
CALM = _plan("Does a queue order matter on a calm single-tenant chat?", 'name = "fair"\nchange = { policy = "fair" }')


@pytest.fixture(scope="module")
def calm_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, str]:
    tmp = tmp_path_factory.mktemp("calm")
    (tmp / "calm.toml").write_text(CALM)
    out = tmp / "study"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["study", str(tmp / "calm.toml"), "--out", str(out)]) == 0
    study = json.loads((out / "study.json").read_text())
    return study, printed.getvalue(), (out / "study.html").read_text()


def test_a_no_op_variant_and_a_calm_load_are_flagged(calm_study: tuple[dict, str, str]) -> None:
    study, printed, html = calm_study
    flags = study["verdict"]["flags"]
    assert len(flags) == 2, flags
    assert flags[0].startswith("variant fair changes no request's treatment") and "(1 tenant)" in flags[0]
    assert flags[1].startswith("the SLO was never at risk") and "(SLO 2000 ms)" in flags[1]
    for flag in flags:
        assert f"flag: {flag}" in printed
        assert f'<p class="warn">flag: {html_escape(flag)}</p>' in html
    # the runs agree: fair treated every request exactly as fcfs did, unit by unit
    digest = {(u["arm"], u["slice"]): u["treatment"] for u in study["units"]}
    assert all(digest[("fair", s)] == digest[("baseline", s)] is not None for s in ("tuning", "held_out"))


PLAN = _plan(
    "d",
    'name = "priority"\nchange = { policy = "priority" }',
    'name = "aging"\nchange = { aging_s = 0.5 }',
    'name = "sjf"\nchange = { policy = "sjf" }',
    'name = "fair-on-sjf"\nbase = "sjf"\nchange = { policy = "fair" }',
)


def _unit(arm: str, slice_name: str, treatment: str, ttft: float) -> dict:
    return {
        "arm": arm,
        "slice": slice_name,
        "trial": 0,
        "treatment": treatment,
        "metrics": {"ttft.p99": ttft, "tpot.p99": 0.01},
    }


def test_which_variants_are_flagged_as_no_ops(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    plan = load_plan(path)
    arms = resolve(plan.baseline, list(plan.variants))
    one_priority = Workload("w", [WorkloadRequest(f"r{i}", i * 0.5, 8, 8, priority=1) for i in range(8)], {})
    # aging's runs match the baseline's (it acts under sjf and priority only); sjf's and fair-on-sjf's do not
    results = [
        _unit(arm, s, "same" if arm in ("baseline", "aging", "priority") else arm, 1.5)
        for arm in ("baseline", "priority", "aging", "sjf", "fair-on-sjf")
        for s in ("tuning", "held_out")
    ]
    flags = study_flags(plan, arms, one_priority, results, slo_ttft_s=2.0, slo_tpot_s=0.2)
    assert [f.split()[1] for f in flags] == ["priority", "aging"], flags
    assert "every priority 1" in flags[0] and "as under baseline in every slice and trial" in flags[1]
    # seen in the runs, the flag cannot tell an ignored knob from one no queue gave a chance to act: it says both
    assert "acted on no request here: the engine ignores it, or no request waited long enough" in flags[1]
    # two priorities reorder; fair on one tenant is fcfs, but its base is sjf: a real change;
    # a p99 TTFT of 1.5 s is in the SLO's region
    two_priorities = Workload("w", [WorkloadRequest(f"r{i}", i * 0.5, 8, 8, priority=i % 2) for i in range(8)], {})
    results = [r if r["arm"] != "priority" else {**r, "treatment": "reordered"} for r in results]
    flags = study_flags(plan, arms, two_priorities, results, slo_ttft_s=2.0, slo_tpot_s=0.2)
    assert [f.split()[1] for f in flags] == ["aging"], flags


def test_the_study_report_has_no_raw_escapes(calm_study: tuple[dict, str, str]) -> None:
    _, _, html = calm_study
    verdict = html[html.index('id="verdict"') : html.index('id="failure-mode"')]
    text = _visible_text(verdict)  # what a reader sees: an escape rendered as text is a double escape
    for raw in ("<code>", "&quot;", "&#x27;", "&amp;"):
        assert raw not in text, raw
    assert "<td>Does a queue order matter on a calm single-tenant chat?</td>" in verdict
    assert "<td>tuning 0-2 s, held_out 2-4 s</td>" in verdict
    assert "request's treatment" in text


def _visible_text(fragment: str) -> str:
    parts: list[str] = []
    parser = HTMLParser(convert_charrefs=True)
    parser.handle_data = parts.append  # type: ignore[method-assign]
    parser.feed(fragment)
    return "".join(parts)


def _cell(mean: float, change: float | None) -> dict:
    return {"mean": mean, "ci": [None, None], "values": [mean], "change": change, "change_ci": [None, None]}


def test_a_reference_arm_never_wins() -> None:
    # the light tenants alone have the lowest p99 TTFT by far: measured for comparison, never the winner
    table = {
        "baseline": {"ttft.p99": _cell(4.0, 0.0)},
        "fair": {"ttft.p99": _cell(1.1, -0.7)},
        "light-alone": {"ttft.p99": _cell(0.014, -0.99)},
    }
    assert wins(table, [Metric("ttft.p99")])[0]["best"] == "light-alone"  # the guard is what bites
    assert wins(table, [Metric("ttft.p99")], reference=["light-alone"])[0]["best"] == "fair"


@pytest.mark.parametrize(
    ("change_ci", "outcome"),
    [((-0.6, -0.4), "holds"), ((-0.6, 0.1), "cannot_tell"), ((None, None), "cannot_tell"), ((0.1, 0.3), "fails")],
)
def test_a_win_is_the_judges_three_outcomes(change_ci: tuple, outcome: str) -> None:
    """ "Which arm wins" decides "the best arm beats the baseline" with the judge on the change's interval: an
    interval on the better side holds (a clear win), one across no change or none at all (one trial) cannot
    tell, one on the worse side fails; the baseline claims nothing."""
    cell = {"mean": 1.0, "ci": (0.9, 1.1), "change": 0.0, "change_ci": (None, None)}
    table = {"baseline": {"ttft.p99": {**cell, "mean": 2.0}}, "fair": {"ttft.p99": {**cell, "change_ci": change_ci}}}
    (row,) = wins(table, [Metric("ttft.p99")])
    assert (row["best"], row["outcome"], row["clear"]) == ("fair", outcome, outcome == "holds")
    alone = {"baseline": {"ttft.p99": cell}}
    assert wins(alone, [Metric("ttft.p99")])[0]["outcome"] is None
