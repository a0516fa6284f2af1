"""An interleaved suite (`interleave = true`): its trials measured in rounds, each a fit run and then one trial of
every pair, so that a pair's trials sample the session's moments as the pooled fit runs do. Checked here: the
file's rule, the order and names of the runs, and that a pair's rounds are judged as one run of all its trials."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import load_suite
from harness.fidelity_suite.table import pair_entry

V8 = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite_v8"
AFTER = 'after = ["azure-code-continuous", "kv-pressure-preempt"]  # the 3rd and the 6th pair\n'


def _interleaved(tmp_path: Path, line: str = "interleave = true\n", after: str = "") -> Path:
    """v8's suite file, interleaved (its fit run's `after` dropped unless `after` is given)."""
    text = (V8 / "suite.toml").read_text()
    assert text.count(AFTER) == 1 and text.count("\ntrials = 3\n") == 1
    path = tmp_path / "suite.toml"
    path.write_text(text.replace(AFTER, after).replace("\ntrials = 3\n", f"\ntrials = 3\n{line}"))
    return path


def test_an_interleaved_suite_names_a_fit_run_a_round_and_a_run_a_pair_and_round(tmp_path: Path) -> None:
    assert not load_suite(V8 / "suite.toml").interleave
    suite = load_suite(_interleaved(tmp_path))
    assert suite.interleave and suite.fit_after == ()
    fit = "fit-step-profile-cover"
    assert suite.fit_names == (fit, f"{fit}-2", f"{fit}-3")
    assert suite.pair_runs(suite.pairs[0]) == ("hol-blocking-static", "hol-blocking-static-2", "hol-blocking-static-3")
    assert load_suite(V8 / "suite.toml").pair_runs(suite.pairs[0]) == ("hol-blocking-static",)


@pytest.mark.parametrize(
    ("line", "after", "says"),
    [
        ('interleave = "yes"\n', "", "field 'interleave': not true or false"),
        ("interleave = 1\n", "", "field 'interleave': not true or false"),
        ("interleave = true\n", AFTER, "an interleaved suite runs a fit run at the start of each round"),
    ],
)
def test_a_bad_interleave_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, after: str, says: str
) -> None:
    bad = _interleaved(tmp_path, line, after)
    runs = tmp_path / "runs"
    assert main(["sim", "fidelity", "--suite", str(bad), "--runs", str(runs), "--measure"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and says in err and str(bad) in err, err
    assert not runs.exists()


def test_measure_runs_rounds_of_a_fit_run_and_one_trial_of_every_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.simulation
    from harness.fidelity_suite import measure as measuring

    suite = load_suite(_interleaved(tmp_path))
    runs = tmp_path / "runs"
    ran: list[str] = []
    commands: list[list[str]] = []

    def run(command: list[str], lock: Path | None, what: str) -> None:  # a fake `batchmark run`: records its --out
        out = Path(command[command.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "metrics.json").write_text("{}")
        ran.append(out.name)
        commands.append(command)

    fitted: list[list[str]] = []

    class Fitted:
        def save(self, path: Path) -> None:
            path.write_text("{}")

    def fit_run(dirs: list[Path], engines: list[str]) -> Fitted:
        assert all((d / "metrics.json").is_file() for d in dirs)  # fitted once every fit run is recorded
        fitted.append([d.name for d in dirs])
        return Fitted()

    monkeypatch.setattr(measuring, "_run", run)
    monkeypatch.setattr(harness.simulation, "fit_run", fit_run)
    measuring.measure(suite, runs, None)
    names = [p.name for p in suite.pairs]
    fits = list(suite.fit_names)
    assert ran == [
        fits[0],
        *names,
        fits[1],
        *(f"{n}-2" for n in names),
        fits[2],
        *(f"{n}-3" for n in names),
    ]
    assert fitted == [fits, fits]  # both profiles, on the three fit runs, once the third is recorded
    pair_commands = [c for c in commands if "--engine" in c]
    assert len(pair_commands) == 27 and all(c[c.index("--repeat") + 1] == "1" for c in pair_commands)
    ran.clear()
    measuring.measure(suite, runs, None)  # every run and profile recorded: nothing again
    assert ran == [] and len(fitted) == 2


def _rounds_of(run: Path, runs: Path, engine: str) -> list[Path]:
    """`run`'s three trials as three runs of one trial each, as an interleaved suite records them."""
    metrics = json.loads((run / "metrics.json").read_text())
    dirs = []
    for k, name in enumerate((run.name, f"{run.name}-2", f"{run.name}-3")):
        shutil.copytree(run, runs / name)
        one = json.loads(json.dumps(metrics))
        for block in one["repeat"][engine].values():
            block["values"] = block["values"][k : k + 1]
        (runs / name / "metrics.json").write_text(json.dumps(one))
        dirs.append(runs / name)
    return dirs


def _held_rounds(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """An interleaved suite file, its runs folder with v8's profiles, and chat-small-static-held's three rounds."""
    suite_path = _interleaved(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    for profile in load_suite(suite_path).profiles.values():
        shutil.copy(V8 / "runs" / profile.file, runs / profile.file)
    return suite_path, runs, _rounds_of(V8 / "runs" / "chat-small-static-held", runs, "static")


def test_a_pair_s_rounds_are_judged_as_one_run_of_all_its_trials(tmp_path: Path) -> None:
    whole = load_suite(V8 / "suite.toml")
    pair = next(p for p in whole.pairs if p.name == "chat-small-static-held")
    runs = tmp_path / "runs"
    runs.mkdir()
    for profile in whole.profiles.values():
        shutil.copy(V8 / "runs" / profile.file, runs / profile.file)
    _rounds_of(V8 / "runs" / pair.name, runs, "static")
    rounds = load_suite(_interleaved(tmp_path))
    got = pair_entry(rounds, pair, runs, simulate_twin, seeds=1)
    want = pair_entry(whole, pair, V8 / "runs", simulate_twin, seeds=1)
    assert got["runs"] == ["chat-small-static-held", "chat-small-static-held-2", "chat-small-static-held-3"]
    assert [r["trials"] for r in got["rows"]] == [3] * 7
    assert got["rows"] == want["rows"] and got["verdict"] == want["verdict"]
    (runs / "chat-small-static-held-3" / "metrics.json").unlink()  # a round not measured: the pair is not
    assert "not measured" in pair_entry(rounds, pair, runs, simulate_twin, seeds=1)["missing"]


def test_rounds_of_different_schedules_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite_path, runs, dirs = _held_rounds(tmp_path)
    requests = dirs[2] / "requests.jsonl"
    requests.write_text(requests.read_text().replace('"arrival_s":0.0', '"arrival_s":0.5', 1))
    assert main(["sim", "fidelity", "--suite", str(suite_path), "--runs", str(runs), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chat-small-static-held-3" in err and "same schedule" in err, err


def test_a_suite_prints_each_traced_trial_s_speed(tmp_path: Path) -> None:
    from harness.fidelity_suite.table import _trial_speeds, format_table
    from tests.sim.test_shape_speed import _traced_run

    run, profile = _traced_run(tmp_path, [1.0, 1.1, 0.9])
    assert _trial_speeds([run], "continuous", profile) == pytest.approx([0.0, 0.1, -0.1], abs=1e-9)
    v8 = V8 / "runs"
    assert _trial_speeds([v8 / "hol-blocking-continuous"], "continuous", v8 / "profile-continuous.json") == []
    table = json.loads((V8 / "expected.json").read_text())
    table["pairs"][0]["trial_speeds"] = [0.05, -0.021, None]
    text = format_table(table)
    assert "  trial speeds against the fit runs (> 0: slower): +5.0%, -2.1%, -" in text
    assert text.count("trial speeds") == 1


def test_a_round_without_its_requests_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite_path, runs, dirs = _held_rounds(tmp_path)
    (dirs[1] / "requests.jsonl").unlink()
    assert main(["sim", "fidelity", "--suite", str(suite_path), "--runs", str(runs), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chat-small-static-held-2/requests.jsonl: cannot read" in err, err
