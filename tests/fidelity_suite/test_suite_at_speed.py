"""The second verdict a suite may register (`[judge] at_trial_speed = true`): each real trial against twins at its
own measured speed (step_scale = 1 + speed), beside the plain verdict. Built from two of the ninth suite's pairs
(its committed rounds and profiles, copied with a speeds.json a round), and a traced run for speeds.json itself."""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import Suite, load_suite
from harness.fidelity_suite.speeds import SPEEDS, profile_digest, read_speeds, run_speeds, write_speeds
from harness.fidelity_suite.table import format_table, pair_entry, suite_table
from tests.fidelity_suite.refusal import assert_refused

V9 = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite_v9"
PAIRS = ("hol-blocking-sjf", "chat-small-static-held")  # the quickest twins: one continuous, one static
JUDGE = "[judge]\nat_trial_speed = true\n"


def _suite_file(tmp_path: Path, judge: str = JUDGE, pairs: tuple[str, ...] = PAIRS) -> Path:
    """v9's suite file with only `pairs`, and `judge` before its first table (top-level keys stay top-level)."""
    head, *blocks = (V9 / "suite.toml").read_text().split("[[pairs]]\n")
    kept = [b for b in blocks if any(f'name = "{name}"\n' in b for name in pairs)]
    assert len(kept) == len(pairs) and head.count("\n[targets]\n") == 1
    path = tmp_path / "suite.toml"
    path.write_text(head.replace("\n[targets]\n", f"\n{judge}\n[targets]\n") + "".join(f"[[pairs]]\n{b}" for b in kept))
    return path


def _engine(suite: Suite, pair: str) -> str:
    return next(p.profile for p in suite.pairs if p.name == pair)  # v9: each profile named after its engine


def _copy(tmp_path: Path, speeds: dict[str, list[float | None]], judge: str = JUDGE) -> tuple[Suite, Path]:
    """The suite and its runs in tmp_path; `speeds`: each pair's speed a round (one trial each), in speeds.json."""
    suite = load_suite(_suite_file(tmp_path, judge, tuple(speeds)))
    runs = tmp_path / "runs"
    runs.mkdir()
    for profile in suite.profiles.values():
        shutil.copy(V9 / "runs" / profile.file, runs / profile.file)
    for pair in suite.pairs:
        profile = runs / suite.profiles[pair.profile].file
        for name, speed in zip(suite.pair_runs(pair), speeds[pair.name], strict=True):
            shutil.copytree(V9 / "runs" / name, runs / name)
            record = {
                "engine": _engine(suite, pair.name),
                "profile": profile.name,
                "profile_sha256": hashlib.sha256(profile.read_bytes()).hexdigest(),
                "speeds": [speed],
            }
            (runs / name / SPEEDS).write_text(json.dumps(record))
    return suite, runs


def _entry(suite: Suite, runs: Path, pair: str) -> dict:
    return pair_entry(suite, next(p for p in suite.pairs if p.name == pair), runs, simulate_twin, seeds=1)


def _trial_values(runs: Path, suite: Suite, pair: str, key: str) -> list[float]:
    """Each round's real value of a metric, read straight from its metrics.json."""
    engine = _engine(suite, pair)
    names = suite.pair_runs(next(p for p in suite.pairs if p.name == pair))
    return [json.loads((runs / n / "metrics.json").read_text())["repeat"][engine][key]["values"][0] for n in names]


KEYS = {"TTFT p50": "ttft_p50_s", "TPOT p50": "tpot_p50_s", "E2E p99": "e2e_p99_s", "output tok/s": "output_tok_s"}


def test_at_speed_zero_the_twins_are_the_plain_twins_judged_trial_by_trial(tmp_path: Path) -> None:
    suite, runs = _copy(tmp_path, {"chat-small-static-held": [0.0, 0.0, 0.0]})
    entry = _entry(suite, runs, "chat-small-static-held")
    at = entry["at_trial_speed"]
    plain = {r["metric"]: r for r in entry["rows"]}
    rows = {r["metric"]: r for r in at["rows"]}
    assert at["speeds"] == [0.0, 0.0, 0.0] and len(rows) == 7
    for metric, key in KEYS.items():
        reals = _trial_values(runs, suite, "chat-small-static-held", key)
        errors = [(plain[metric]["simulated"] - v) / v for v in reals]
        want = statistics.median(errors)
        assert rows[metric]["trial_errors"] == pytest.approx(errors, rel=1e-9), metric
        assert rows[metric]["error"] == pytest.approx(want, rel=1e-9), metric
        assert rows[metric]["spread"] == pytest.approx(max(abs(e - want) for e in errors), rel=1e-9), metric
    worst = {r["verdict"] for r in at["rows"]}
    assert at["verdict"] == ("fails" if "fails" in worst else "holds" if worst == {"holds"} else "cannot_tell")


def test_a_slower_trial_s_twins_run_slower(tmp_path: Path) -> None:
    suite, runs = _copy(tmp_path, {"chat-small-static-held": [0.25, 0.25, 0.25]})
    entry = _entry(suite, runs, "chat-small-static-held")
    plain = {r["metric"]: r for r in entry["rows"]}["TPOT p50"]
    at = {r["metric"]: r for r in entry["at_trial_speed"]["rows"]}["TPOT p50"]
    reals = _trial_values(runs, suite, "chat-small-static-held", "tpot_p50_s")
    simulated = [v * (1 + e) for v, e in zip(reals, at["trial_errors"], strict=True)]  # e = (sim - v) / v
    assert simulated == pytest.approx([plain["simulated"] * 1.25] * 3, rel=0.03)
    assert at["error"] > plain["error"] + 0.2


def test_a_trial_of_unknown_speed_cannot_tell_and_says_why(tmp_path: Path) -> None:
    suite, runs = _copy(tmp_path, {"hol-blocking-sjf": [0.0, None, 0.0]})
    at = _entry(suite, runs, "hol-blocking-sjf")["at_trial_speed"]
    assert at["verdict"] == "cannot_tell" and at["rows"] == []
    assert at["why"] == "trial 2's speed is unknown (no step of a shape the fit runs had)"
    (runs / "hol-blocking-sjf-3" / SPEEDS).unlink()  # neither a trace nor speeds.json
    at = _entry(suite, runs, "hol-blocking-sjf")["at_trial_speed"]
    assert at["verdict"] == "cannot_tell" and at["speeds"] is None and "neither its step traces" in at["why"]
    text = format_table(suite_table(suite, runs, simulate_twin, seeds=1))
    assert "  at trial speed          cannot tell: a round keeps neither its step traces" in text


def test_a_stale_speeds_json_is_one_line_exit_2(tmp_path: Path) -> None:
    suite, runs = _copy(tmp_path, {"hol-blocking-sjf": [0.0, 0.0, 0.0]})
    path = runs / "hol-blocking-sjf-2" / SPEEDS
    path.write_text(json.dumps(json.loads(path.read_text()) | {"profile_sha256": "0" * 64}))
    argv = ["sim", "fidelity", "--suite", str(suite.path), "--runs", str(runs), "--seeds", "1"]
    done = subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{path}: stale: measured against other bytes of the profile" in done.stderr


@pytest.mark.parametrize(
    ("judge", "says"),
    [
        ('[judge]\nat_trial_speed = "yes"\n', "judge: field 'at_trial_speed': not true or false"),
        ("[judge]\nat_trial_speed = 1\n", "judge: field 'at_trial_speed': not true or false"),
        ("[judge]\nat_trial_sped = true\n", "judge: unknown field 'at_trial_sped' (known: at_trial_speed, "),
        ("judge = 3\n", "field 'judge': not a table ([judge])"),
    ],
)
def test_a_bad_judge_table_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str, says: str
) -> None:
    assert_refused(capsys, _suite_file(tmp_path, judge), says)


def test_the_judge_table_s_default_is_the_plain_verdict_alone(tmp_path: Path) -> None:
    assert not load_suite(V9 / "suite.toml").at_trial_speed
    assert not load_suite(_suite_file(tmp_path, "[judge]\n")).at_trial_speed
    assert load_suite(_suite_file(tmp_path)).at_trial_speed


def test_the_table_prints_the_second_verdict_beside_the_plain_one(tmp_path: Path) -> None:
    speeds = {"hol-blocking-sjf": [0.0, 0.0, 0.0], "chat-small-static-held": [0.0, 0.0, 0.0]}
    suite, runs = _copy(tmp_path, speeds)
    table = suite_table(suite, runs, simulate_twin, seeds=1)
    counts = table["at_trial_speed_verdicts"]
    assert counts == {v: sum(p["at_trial_speed"]["verdict"] == v for p in table["pairs"]) for v in counts}
    assert sum(counts.values()) == 2 and table["at_trial_speed_target"] == "not met"  # 6 to hold of 2
    lines = format_table(table).splitlines()
    at = [line for line in lines if line.startswith("  at trial speed ")]
    assert len(at) == 2 and all(line.rstrip().endswith(("holds", "FAILS", "cannot tell")) for line in at)
    plain_line = next(i for i, line in enumerate(lines) if line.startswith("hol-blocking-sjf "))
    assert lines[plain_line + 3].startswith("  at trial speed ")  # after the trials' spread and speeds
    final = (
        f"at each trial's measured speed: {counts['holds']} hold, {counts['fails']} fail, "
        f"{counts['cannot_tell']} cannot tell (target: 6 of 2 hold): target not met"
    )
    assert final in lines
    legend = lines[-1]
    assert "conditional on the speed measured from the real trial itself" in legend
    assert "beside the plain verdict, never instead of it" in legend


def test_without_the_judge_table_the_table_is_the_plain_one(tmp_path: Path) -> None:
    speeds = {"hol-blocking-sjf": [0.0, 0.0, 0.0]}
    suite, runs = _copy(tmp_path, speeds, judge="")
    table = suite_table(suite, runs, simulate_twin, seeds=1)
    assert "at_trial_speed_verdicts" not in table and "at_trial_speed" not in table["pairs"][0]
    off = load_suite(_suite_file(tmp_path, "[judge]\nat_trial_speed = false\n", tuple(speeds)))
    assert json.dumps(suite_table(off, runs, simulate_twin, seeds=1)) == json.dumps(table)
    assert "at trial speed" not in format_table(table) and "measured speed" not in format_table(table)


def _static_traced_run(tmp_path: Path, factors: list[float]) -> tuple[Path, Path]:
    """test_shape_speed's traced run, its traces the static engine's (the run's first in-process engine)."""
    from tests.sim.test_shape_speed import _traced_run

    run, profile = _traced_run(tmp_path, factors)
    for trace in sorted((run / "steps").glob("continuous-t*.jsonl")):
        trace.rename(trace.with_name(trace.name.replace("continuous-", "static-")))
    return run, profile


def test_speeds_json_keeps_the_traced_speeds_and_outlives_the_traces(tmp_path: Path) -> None:
    run, profile = _static_traced_run(tmp_path, [1.0, 1.1, 0.9])
    assert write_speeds(run, "static", profile)
    record = json.loads((run / SPEEDS).read_text())
    assert record["engine"] == "static" and record["profile"] == "profile.json"
    assert record["profile_sha256"] == hashlib.sha256(profile.read_bytes()).hexdigest() == profile_digest(profile)
    assert record["speeds"] == pytest.approx([0.0, 0.1, -0.1], abs=1e-9)
    shutil.rmtree(run / "steps")  # trimmed: the speeds stay
    assert not write_speeds(run, "static", profile) and (run / SPEEDS).is_file()
    assert run_speeds(run, "static", profile) == pytest.approx([0.0, 0.1, -0.1], abs=1e-9)
    with pytest.raises(Exception, match="measured for engine 'static', not 'continuous'"):
        read_speeds(run, "continuous", profile)
    profile.write_bytes(profile.read_bytes() + b"\n")  # other bytes: the speeds are not theirs
    with pytest.raises(Exception, match="stale: measured against other bytes of the profile"):
        read_speeds(run, "static", profile)


def test_measure_writes_each_traced_pair_run_s_speeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.fidelity_suite import measure as measuring

    def run_nothing(command: list[str], lock: Path | None, what: str) -> None:
        raise AssertionError(f"measured {what}")

    monkeypatch.setattr(measuring, "_run", run_nothing)
    run, _ = _static_traced_run(tmp_path, [1.2, 1.05])
    path = tmp_path / "suite.toml"
    path.write_text(
        "trials = 2\n[targets]\nmedian_tolerance = 0.1\np99_tolerance = 0.2\npairs_to_hold = 1\n"
        '[fit_run]\nname = "fit"\n'
        '[profiles.static]\nfile = "profile.json"\nengine = "static"\n'
        '[[pairs]]\nname = "run"\nargs = ["--workload", "chat-small"]\nengine = "static"\nprofile = "static"\n'
    )
    measuring.measure(
        load_suite(path), tmp_path, None
    )  # every run and the profile recorded: only the speeds are written
    assert json.loads((run / SPEEDS).read_text())["speeds"] == pytest.approx([0.2, 0.05], abs=1e-9)
    assert f"run: trial speeds against profile.json: {run / SPEEDS}" in capsys.readouterr().out
