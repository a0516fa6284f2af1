"""Fidelity, measured without live timing: simulated twins of recorded real runs (tests/fixtures/sim_fidelity).

The recorded runs and the fitted profile are fixed, and a twin's noise is seeded, so what the simulator
reproduces is a deterministic number: these tests pin it (a change to the schedulers or the cost models that
moves it must re-record `expected.json`, saying why) and bound what must always hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.sim.fidelity_tables import Tables, assert_reproduced, twin_errors

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity"
PROFILE = FIXTURE / "profile.json"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())
RUNS = sorted(EXPECTED)


@pytest.fixture(scope="module")
def tables() -> Tables:
    return twin_errors(FIXTURE, RUNS, PROFILE)


def test_the_twins_reproduce_the_recorded_errors(tables: Tables) -> None:
    assert_reproduced(tables, EXPECTED)


def test_throughput_is_within_20_percent_everywhere(tables: dict) -> None:
    # The output rate follows from the mean step time, which the fit gets right; latency percentiles also
    # carry the shared machine's noise (docs/measurements/2026-12-01-sim-fidelity-cpu.md: two identical real
    # runs differed by up to 2x).
    errors = {(run, engine): e["output tok/s"] for run, engines in tables.items() for engine, e in engines.items()}
    assert len(errors) == 8
    assert all(abs(err) <= 0.2 for err in errors.values()), errors
    assert sum(abs(err) <= 0.05 for err in errors.values()) >= 6, errors


def test_the_fidelity_command_prints_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    argv = ["sim", "fidelity", str(FIXTURE / "burst"), "--profile", str(PROFILE), "--json", str(out), "--seeds", "2"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for metric in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99", "output tok/s"):
        assert printed.count(metric) == 2  # static and continuous
    table = json.loads(out.read_text())
    assert {t["engine"] for t in table} == {"static", "continuous"}
    assert {t["seeds"] for t in table} == {2}
    assert "median of 2" in printed and "seeds' range" in printed


def test_several_seeds_are_compared_by_their_median_beside_the_real_interval(tmp_path: Path) -> None:
    from harness.cli.sim import simulate_twin
    from harness.metrics.simulation import fidelity_rows
    from harness.simulation import run_engines

    run = FIXTURE / "burst"
    engine = next(e for e in run_engines(run) if e["name"] == "continuous")
    real = json.loads((run / "metrics.json").read_text())["engines"]["continuous"]
    twins = [simulate_twin(run, engine, PROFILE, seed=s) for s in range(3)]
    one = {r["metric"]: r for r in fidelity_rows(real, twins[0])}
    three = {r["metric"]: r for r in fidelity_rows(real, *twins)}
    p99 = three["TTFT p99"]
    singles = sorted(fidelity_rows(real, t)[1]["simulated"] for t in twins)
    assert len(set(singles)) == 3  # the seeds draw different noise
    assert p99["simulated"] == singles[1] and p99["simulated_range"] == [singles[0], singles[2]]
    assert one["TTFT p99"]["simulated_range"] is None
    low, high = p99["real_ci"]
    assert low <= p99["real"] <= high
    assert p99["within_real_ci"] == (low <= p99["simulated"] <= high)
    assert three["output tok/s"]["real_ci"] is None and three["output tok/s"]["within_real_ci"] is None
    headline = simulate_twin(run, engine, PROFILE, seed=0, headline=True)  # what a fidelity suite's twins compute
    assert {m: headline["latency"][m] for m in ("ttft", "tpot", "e2e")} == {
        m: twins[0]["latency"][m] for m in ("ttft", "tpot", "e2e")
    }
    assert headline["throughput"]["steady"] == twins[0]["throughput"]["steady"]
    assert {r["metric"]: r for r in fidelity_rows(real, headline)} == one


def test_a_run_without_a_measured_engine_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = tmp_path / "sim-only"
    assert (
        main(
            [
                "run",
                "--workload",
                "chat-small",
                "--requests",
                "8",
                "--engine",
                "sim",
                "--out",
                str(run),
                "--no-report",
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["sim", "fidelity", str(run), "--profile", str(PROFILE)]) == 2
    assert "no in-process engine" in capsys.readouterr().err
    assert main(["sim", "fit", str(run), "-o", str(tmp_path / "p.json")]) == 2
    assert "simulated: fit on measured steps only" in capsys.readouterr().err


def test_fidelity_compares_five_seeded_twins_by_default_and_refuses_zero() -> None:
    from harness.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["sim", "fidelity", "run", "--profile", "p.json"]).seeds == 5
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["sim", "fidelity", "run", "--profile", "p.json", "--seeds", "0"])
    assert exit_info.value.code == 2


def test_a_run_of_several_trials_is_judged_against_their_median_and_shows_their_spread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import shutil

    run = tmp_path / "burst"
    shutil.copytree(FIXTURE / "burst", run)
    metrics = json.loads((run / "metrics.json").read_text())
    real = metrics["engines"]["continuous"]
    p99 = real["latency"]["ttft"]["percentiles"]["p99"]["value"]
    tok_s = real["throughput"]["steady"]["output_token_rate"]
    # three trials of the same schedule, as `batchmark run --repeat 3` writes them: TTFT p99 repeats within 20%
    metrics["repeat"] = {
        "continuous": {
            "ttft_p99_s": {"values": [1.2 * p99, p99, 0.9 * p99]},
            "output_tok_s": {"values": [tok_s, 1.01 * tok_s]},
            "tpot_p50_s": {"values": [0.004]},
        }
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    out = tmp_path / "table.json"
    assert (
        main(
            [
                "sim",
                "fidelity",
                str(run),
                "--profile",
                str(PROFILE),
                "--engine",
                "continuous",
                "--seeds",
                "1",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    rows = {r["metric"]: r for r in json.loads(out.read_text())[0]["rows"]}
    assert rows["TTFT p99"]["real"] == pytest.approx(p99) and rows["TTFT p99"]["trials_spread"] == pytest.approx(0.2)
    assert rows["TTFT p99"]["real_ci"] is None and rows["TTFT p99"]["within_real_ci"] is None
    assert rows["output tok/s"]["real"] == pytest.approx(1.005 * tok_s)
    assert rows["output tok/s"]["trials_spread"] == pytest.approx(0.005 / 1.005)
    # one trial's value is no spread: the row stays trial 0's, with its bootstrap interval
    assert rows["TPOT p50"]["trials_spread"] is None and rows["TPOT p50"]["real_ci"] is not None
    assert "3 trials, +-20%" in printed
    assert "repeats by more than 10% on: continuous TTFT p99: no simulation" in printed


def test_twin_dir_writes_each_twins_records_and_steps_as_a_run_lays_out_its_trials(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run, twins = FIXTURE / "burst", tmp_path / "twins"
    plain, traced = tmp_path / "plain.json", tmp_path / "traced.json"
    base = ["sim", "fidelity", str(run), "--profile", str(PROFILE), "--seeds", "2"]
    assert main([*base, "--json", str(plain)]) == 0
    assert main([*base, "--json", str(traced), "--twin-dir", str(twins)]) == 0
    assert json.loads(plain.read_text()) == json.loads(traced.read_text())  # writing the traces changes nothing
    requests = {json.loads(line)["request_id"] for line in (run / "requests.jsonl").read_text().splitlines()}
    records = [json.loads(line) for line in (twins / "records.jsonl").read_text().splitlines()]
    for engine in ("static", "continuous"):
        for seed in (0, 1):
            ids = [r["request_id"] for r in records if r["engine"] == f"sim-{engine}" and r["trial"] == seed]
            assert sorted(ids) == sorted(requests)
            steps = (twins / "steps" / f"sim-{engine}-t{seed}.jsonl").read_text().splitlines()
            assert {i for line in steps for i in json.loads(line)["admitted"]} == requests
    capsys.readouterr()
    assert main([*base, "--twin-dir", str(twins)]) == 2  # never mixed with an earlier twin's files
    assert capsys.readouterr().err.strip().endswith("not a new or empty directory")
    suite = FIXTURE.parent / "fidelity_suite" / "suite.toml"
    assert main(["sim", "fidelity", "--suite", str(suite), "--twin-dir", str(tmp_path / "other")]) == 2
    assert "--twin-dir goes with RUN only" in capsys.readouterr().err
