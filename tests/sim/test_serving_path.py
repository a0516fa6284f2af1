"""The serving path and contention of a router's run (harness/serving_path.py), and the cluster twin that takes
them from a calibration run (`sim fidelity --serving FILE`, `sim serving-path`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engines.sim.fitted import load_profile
from engines.step_features import FEATURE_NAMES, StepFeatures
from harness.cli import main
from harness.cli.sim import simulate_twin
from harness.errors import HarnessInputError
from harness.serving_path import ServingPath, paired_path_s, serving_path
from harness.simulation import TRACE_FIELDS
from tests.fixtures.records import make_record
from tests.sim.test_cluster_twin import PROFILE, router_run

TTFT = "batchmark_time_to_first_token_seconds"


def prom(count: int, total: float) -> str:
    return f"# TYPE {TTFT} histogram\n{TTFT}_sum {total}\n{TTFT}_count {count}\n"


def calibration_run(tmp_path: Path, contention: float, server_ttft_s: float, client_ttft_s: float) -> Path:
    """A router's run whose two replicas took `contention` times the profile's price for every step, and whose
    servers' and client's mean TTFT are the ones given."""
    run = router_run(tmp_path, "round_robin")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["engines"]["fleet"]["latency"]["ttft"]["mean"] = client_ttft_s
    (run / "metrics.json").write_text(json.dumps(metrics))
    profile = load_profile(PROFILE)
    folder = run / "replicas"
    folder.mkdir()
    for r in (1, 2):
        t, rows = 100.0 * r, []
        for i in range(40):
            shape = {"prefill_tokens": 16 * (i % 5), "prefill_chunks": int(i % 5 > 0), "decode_seqs": 1 + i % 3}
            features = dict.fromkeys(FEATURE_NAMES, 0) | shape
            price = profile.step_time(StepFeatures(**features))
            traced = {TRACE_FIELDS[name]: value for name, value in features.items()}  # as a trace names them
            rows.append(
                {"step": i, "t_start": t, "t_end": t + contention * price, "num_running": 2, "finished": [], **traced}
            )
            t += contention * price + 0.001
        (folder / f"r{r}.steps.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        (folder / f"r{r}.before.prom").write_text(prom(10, 1.0))  # a run before this one: differenced away
        (folder / f"r{r}.after.prom").write_text(prom(10 + 32, 1.0 + 32 * server_ttft_s))
    return run


def test_the_options_are_the_step_ratio_and_the_ttft_the_servers_did_not_see(tmp_path: Path) -> None:
    run = calibration_run(tmp_path, contention=1.25, server_ttft_s=0.010, client_ttft_s=0.014)
    options, evidence = serving_path(run, PROFILE)
    assert evidence.steps == 80 and evidence.requests == 64
    assert evidence.contention == pytest.approx(1.25) and evidence.step_ratio_median == pytest.approx(1.25)
    assert options.slowdown == pytest.approx(0.25) and options.path_ms == pytest.approx(4.0)
    assert options.measured_on == str(run)
    faster, _ = serving_path(calibration_run(tmp_path / "b", 0.8, 0.010, 0.009), PROFILE)
    assert faster.slowdown == 0 and faster.path_ms == 0  # the options add time, never take it away


def test_the_twin_takes_the_path_and_the_contention(tmp_path: Path) -> None:
    run = router_run(tmp_path, "round_robin")
    fleet = json.loads((run / "manifest.json").read_text())["engines"][0]
    plain = simulate_twin(run, fleet, PROFILE, noise=False)
    path = simulate_twin(run, fleet, PROFILE, noise=False, serving=ServingPath(5.0, 0.0, "cal", "p"))
    slow = simulate_twin(run, fleet, PROFILE, noise=False, serving=ServingPath(0.0, 0.5, "cal", "p"))

    def p50(summary: dict, metric: str) -> float:
        return summary["latency"][metric]["percentiles"]["p50"]["value"]

    # the path is the same for every request: at this load (no request waits long) it moves TTFT by itself
    assert p50(path, "ttft") == pytest.approx(p50(plain, "ttft") + 0.005, abs=5e-4)
    assert p50(path, "tpot") == pytest.approx(p50(plain, "tpot"), rel=0.02)
    assert p50(slow, "tpot") > 1.3 * p50(plain, "tpot") and p50(slow, "ttft") > p50(plain, "ttft")


def test_fidelity_with_serving_prints_where_it_was_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calibration = calibration_run(tmp_path / "cal", 1.25, 0.010, 0.014)
    assert (
        main(["sim", "serving-path", str(calibration), "--profile", str(PROFILE), "-o", str(tmp_path / "s.json")]) == 0
    )
    assert "x1.250" in capsys.readouterr().out
    judged = router_run(tmp_path, "cache_aware")
    assert (
        main(
            [
                "sim",
                "fidelity",
                str(judged),
                "--profile",
                str(PROFILE),
                "--no-noise",
                "--serving",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "path_ms=4.00 and slowdown=0.250, measured on" in out and str(calibration) in out


@pytest.mark.parametrize(("field", "value"), [("path_ms", float("nan")), ("slowdown", -0.1), ("path_ms", "3")])
def test_a_bad_serving_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object
) -> None:
    good = {"path_ms": 4.0, "slowdown": 0.2, "measured_on": "runs/cal", "profile": "p.json"}
    bad = tmp_path / "serving.json"
    bad.write_text(json.dumps(good | {field: value}))  # NaN is written as the bare token NaN, which json reads
    run = router_run(tmp_path, "round_robin")
    assert main(["sim", "fidelity", str(run), "--profile", str(PROFILE), "--no-noise", "--serving", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err and str(bad) in err and "Traceback" not in err, err


def test_a_serving_file_measured_on_the_judged_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = calibration_run(tmp_path, 1.25, 0.010, 0.014)
    assert main(["sim", "serving-path", str(run), "--profile", str(PROFILE), "-o", str(tmp_path / "s.json")]) == 0
    capsys.readouterr()
    assert main(["sim", "fidelity", str(run), "--profile", str(PROFILE), "--serving", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "itself" in err, err


def test_a_run_without_replica_traces_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = router_run(tmp_path, "round_robin")
    shutil.rmtree(run / "replicas", ignore_errors=True)
    assert main(["sim", "serving-path", str(run), "--profile", str(PROFILE)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step-trace" in err, err


def records(folder: Path, ttft_s: dict[str, float]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"request_id": r, "t_scheduled": float(i), "t_first_token": i + t}) + "\n"
        for i, (r, t) in enumerate(ttft_s.items())
    ]
    (folder / "records.jsonl").write_text("".join(lines))
    return folder


def test_the_paired_path_is_the_median_difference_a_stalled_request_does_not_move(tmp_path: Path) -> None:
    in_process = {f"r{i}": 0.010 + 0.001 * (i % 4) for i in range(21)}
    served = {r: t + 0.004 for r, t in in_process.items()} | {"r7": 0.600}  # one request the machine stalled
    served_run, in_process_run = records(tmp_path / "served", served), records(tmp_path / "inproc", in_process)
    assert paired_path_s(served_run, in_process_run) == (pytest.approx(0.004), 21)
    calibration = calibration_run(tmp_path / "cal", 1.25, 0.010, 0.030)  # its own mean path (20 ms) is not used
    options, _ = serving_path(calibration, PROFILE, (served_run, in_process_run))
    assert options.path_ms == pytest.approx(4.0) and options.slowdown == pytest.approx(0.25)
    assert str(served_run) in options.measured_on and str(calibration) in options.measured_on


def test_a_non_numeric_ttft_field_is_one_line_naming_it(tmp_path: Path) -> None:
    served = records(tmp_path / "served", {"r0": 0.01})
    (served / "records.jsonl").write_text('{"request_id": "r0", "t_scheduled": 0.0, "t_first_token": "soon"}\n')
    with pytest.raises(HarnessInputError, match=r"records.jsonl:1: field t_first_token: .*'soon'"):
        paired_path_s(served, records(tmp_path / "inproc", {"r0": 0.01}))


def test_the_path_is_the_median_per_request_where_the_records_carry_server_ttfts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Records with each request's server TTFT (`batchmark serve` says it per request): the path is the median of
    client TTFT - server TTFT over requests, which one stalled request does not move; the mean difference does."""
    run = calibration_run(tmp_path, contention=1.0, server_ttft_s=0.010, client_ttft_s=0.0236)
    rows = [
        make_record(f"r{i}", t_scheduled=0.5 * i, ttft=0.014, gaps=[0.01], engine="fleet", server_ttft_s=0.010)
        for i in range(31)
    ]
    rows.append(make_record("stalled", t_scheduled=16.0, ttft=0.452, engine="fleet", server_ttft_s=0.010))
    (run / "records.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    options, evidence = serving_path(run, PROFILE)
    assert evidence.per_request_paths == 32 and evidence.path_s == pytest.approx(0.004)
    assert evidence.mean_path_s == pytest.approx(0.0136)  # the stalled request's 438 ms over 32
    assert options.path_ms == pytest.approx(4.0)
    assert main(["sim", "serving-path", str(run), "--profile", str(PROFILE)]) == 0
    out = capsys.readouterr().out
    assert "path: 4.00 ms, per request: median over 32 requests of client TTFT - server_ttft_s" in out
    for row in rows:
        row["server_ttft_s"] = None  # any other server: no per-request value, so the means
    (run / "records.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    options, evidence = serving_path(run, PROFILE)
    assert evidence.per_request_path_s is None and options.path_ms == pytest.approx(13.6)
    assert main(["sim", "serving-path", str(run), "--profile", str(PROFILE)]) == 0
    assert "path: 13.60 ms, mean client TTFT - mean server TTFT" in capsys.readouterr().out


def test_a_bad_server_ttft_in_the_records_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = calibration_run(tmp_path, contention=1.0, server_ttft_s=0.010, client_ttft_s=0.014)
    row = make_record("r0", ttft=0.014, engine="fleet", server_ttft_s="fast")
    (run / "records.jsonl").write_text(json.dumps(row) + "\n")
    assert main(["sim", "serving-path", str(run), "--profile", str(PROFILE)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "server_ttft_s" in err and "Traceback" not in err, err
