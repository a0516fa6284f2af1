"""A run that measures an engine and simulates its twin: `sim fit` on the measured trace, and a report that
says which numbers are simulated and shows how far they landed (structure only: no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.sim.fitted import load_profile
from harness.cli import main

PROFILE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity" / "profile.json"


@pytest.fixture(scope="module")
def twin_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("twin") / "run"
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "24",
        "--rate",
        "8",
        "--threads",
        "1",
        "--out",
        str(out),
        "--engine",
        "continuous",
        "--engine",
        f"sim:profile={PROFILE},twin=continuous,label=twin",
        "--no-progress",
    ]
    assert main(argv) == 0
    return out


def test_the_report_says_simulated_and_shows_the_fidelity_table(twin_run: Path) -> None:
    html = (twin_run / "report.html").read_text(encoding="utf-8")
    assert 'id="simulated-notice"' in html and "SIMULATED: twin ran in virtual time" in html
    assert "fitted cost model" in html
    assert "Fidelity: twin against continuous" in html
    assert html.count('class="fidelity-table"') == 1
    summary = (twin_run / "summary.md").read_text(encoding="utf-8")
    assert "SIMULATED: twin" in summary and "Fidelity of twin against the measured continuous" in summary
    manifest = json.loads((twin_run / "manifest.json").read_text())
    sims = [e for e in manifest["engines"] if e.get("simulated")]
    assert [e["name"] for e in sims] == ["twin"] and sims[0]["simulated_with"]["twin"] == "continuous"


def test_a_measured_trace_fits_a_profile(twin_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.json"
    assert main(["sim", "fit", str(twin_run), "--engine", "continuous", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fitted" in printed and "R^2" in printed
    profile = load_profile(out)
    assert profile.fit["steps"] > 50 and profile.intercept_s >= 0
    assert profile.engine["kv_blocks"] and profile.engine["fitted_engines"] == ["continuous"]
    prefill = profile.fit["ranges"]["prefill_tokens"]  # what the fit measured, printed where it extrapolates
    assert 0 < prefill["min"] <= prefill["max"]
    assert f"prefill_tokens {prefill['min']:,.0f}-{prefill['max']:,.0f}" in printed
    assert main(["sim", "fit", str(twin_run), "--engine", "nope", "-o", str(out)]) == 2


def test_several_runs_pool_their_steps_and_must_share_a_model(
    twin_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["sim", "fit", str(twin_run), "--engine", "continuous", "-o", str(one)]) == 0
    other = tmp_path / "other"
    shutil.copytree(twin_run, other)
    assert main(["sim", "fit", str(twin_run), str(other), "--engine", "continuous", "-o", str(two)]) == 0
    single, pooled = load_profile(one), load_profile(two)
    assert pooled.fit["steps"] == 2 * single.fit["steps"]
    assert pooled.fit["run_dir"] == f"{twin_run}, {other}"
    manifest = json.loads((other / "manifest.json").read_text())
    for engine in manifest["engines"]:
        engine.setdefault("model", {})["weight_hash"] = "another-model"
    (other / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["sim", "fit", str(twin_run), str(other), "--engine", "continuous", "-o", str(two)]) == 2
    err = capsys.readouterr().err.strip()
    assert "measured other weights" in err and str(other) in err and len(err.splitlines()) == 1


def test_a_static_engine_measures_no_dispatch(
    twin_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    measured = tmp_path / "continuous.json"
    assert main(["sim", "fit", str(twin_run), "--engine", "continuous", "-o", str(measured)]) == 0
    assert load_profile(measured).fit["idle_arrivals"] > 0 and load_profile(measured).dispatch_s > 0
    static = tmp_path / "static-run"  # the same trace, its steps said to come from a static scheduler
    shutil.copytree(twin_run, static)
    for trace in (static / "steps").glob("continuous-t*.jsonl"):
        rows = [json.loads(line) for line in trace.read_text().splitlines()]
        trace.write_text("".join(json.dumps({**row, "scheduler": "static"}) + "\n" for row in rows))
    out = tmp_path / "static.json"
    capsys.readouterr()
    assert main(["sim", "fit", str(static), "--engine", "continuous", "-o", str(out)]) == 0
    # its idle arrivals waited for a batch to form (the scheduler's wait, which the simulation replays)
    assert load_profile(out).fit["idle_arrivals"] == 0 and load_profile(out).dispatch_s == 0.0
    assert "dispatch: not measured" in capsys.readouterr().out
