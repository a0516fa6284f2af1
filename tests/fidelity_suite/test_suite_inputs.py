"""The suite file checked before anything runs: a pair naming an unknown workload, engine or profile (or an engine
without a twin) is one line naming the suite and the pair, exit 2, and nothing is measured or simulated."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.cli import main
from harness.fidelity_suite.spec import load_suite
from harness.judge.fidelity import fidelity_outcome, suite_outcome

SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite" / "suite.toml"


def test_the_committed_suite_covers_the_issue_s_regimes() -> None:
    suite = load_suite(SUITE)
    assert len(suite.pairs) >= 8 and suite.trials == 3
    covers = " ".join(p.covers for p in suite.pairs)
    for regime in ("long prompts", "KV pressure", "head-of-line", "held", "non-FCFS", "multi-turn"):
        assert regime in covers, regime
    # every profile is fitted on a run outside the suite, one per engine
    assert "step-profile" in suite.fit_args and not any("step-profile" in p.args for p in suite.pairs)
    assert {p.engine for p in suite.profiles.values()} == {"static", "continuous"}


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('"--workload", "kv-pressure"', '"--workload", "no-such-preset"', "unknown workload 'no-such-preset'"),
        ('engine = "continuous:kv_blocks=160"', 'engine = "turbo"', "unknown engine 'turbo'"),
        ('engine = "continuous:kv_blocks=160"', 'engine = "sim"', "only in-process engines have twins"),
        (
            'profile = "static"\n\n[[pairs]]\nname = "chat-small',
            'profile = "nope"\n\n[[pairs]]\nname = "chat-small',
            "unknown profile 'nope'",
        ),
    ],
)
def test_a_pair_naming_something_unknown_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, says: str
) -> None:
    text = SUITE.read_text()
    assert old in text
    bad = tmp_path / "suite.toml"
    bad.write_text(text.replace(old, new, 1))
    out = tmp_path / "table.json"
    runs = tmp_path / "runs"
    assert main(["sim", "fidelity", "--suite", str(bad), "--runs", str(runs), "--measure", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and says in err and str(bad) in err, err
    assert not out.exists() and not runs.exists()


def test_suite_mode_refuses_a_run_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "fidelity", "some-run", "--suite", str(SUITE)]) == 2
    assert "--suite" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "spread", "within_spread", "outcome"),
    [
        (0.05, 0.02, False, "holds"),
        (-0.12, 0.02, False, "fails"),
        (0.12, 0.3, False, "cannot_tell"),
        (0.45, 0.3, False, "fails"),
        (0.05, 0.3, False, "cannot_tell"),
        (0.3, 0.35, True, "holds"),
        (-0.25, 0.1, True, "fails"),
        (0.15, None, True, "holds"),
        (None, 0.1, False, "cannot_tell"),
    ],
)
def test_a_metric_s_verdict_weighs_the_real_run_s_spread(
    error: float | None, spread: float | None, within_spread: bool, outcome: str
) -> None:
    tolerance = 0.2 if within_spread else 0.1
    assert fidelity_outcome(error, spread, tolerance, within_spread=within_spread) == outcome


@pytest.mark.parametrize(
    ("holds", "fails", "cannot_tell", "outcome"),
    [
        (6, 3, 0, "met"),
        (6, 0, 3, "met"),
        (3, 6, 0, "not met"),
        (3, 4, 2, "not met"),
        (3, 3, 3, "cannot tell"),
        (0, 0, 9, "cannot tell"),
    ],
)
def test_the_suite_target_is_met_not_met_or_cannot_tell(holds: int, fails: int, cannot_tell: int, outcome: str) -> None:
    counts = {"holds": holds, "fails": fails, "cannot_tell": cannot_tell}
    assert suite_outcome(counts, need=6) == outcome


def test_measure_runs_each_pair_with_its_trials_and_keeps_what_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.fidelity_suite import measure as measuring

    suite = load_suite(SUITE)
    command = measuring.pair_command(suite, suite.pairs[2], tmp_path)
    assert command[-4:] == ["--repeat", "3", "--out", str(tmp_path / "kv-pressure-preempt")]
    assert command[command.index("--engine") + 1] == "continuous:kv_blocks=160" and "--threads" in command
    for pair in suite.pairs:  # every run recorded and every profile fitted: a resumed suite measures nothing again
        (tmp_path / pair.name).mkdir()
        (tmp_path / pair.name / "metrics.json").write_text("{}")
    for profile in suite.profiles.values():
        (tmp_path / profile.file).write_text("{}")
    ran: list[list[str]] = []
    monkeypatch.setattr(measuring.subprocess, "run", lambda command, **_: ran.append(command))
    measuring.measure(suite, tmp_path, tmp_path / "lock")
    assert ran == []
    (tmp_path / suite.pairs[0].name / "metrics.json").unlink()  # one pair missing: that pair alone is run

    def run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        ran.append(command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(measuring.subprocess, "run", run)
    measuring.measure(suite, tmp_path, tmp_path / "lock")
    assert ran == [measuring.pair_command(suite, suite.pairs[0], tmp_path)] and (tmp_path / "lock").exists()


def test_pairs_without_runs_are_reported_as_not_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "fidelity", "--suite", str(SUITE), "--runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for pair in load_suite(SUITE).pairs:
        assert f"{pair.name:<26}not measured" in out, pair.name
    assert "9 cannot tell (9 not measured)" in out and "target cannot tell" in out


def test_a_missing_runs_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "fidelity", "--suite", str(SUITE), "--runs", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--runs" in err and "--measure" in err


AFTER = '[fit_run]\nname = "fit-step-profile"\n'  # the first suite's fit run: `after` goes under its name


def _with_after(tmp_path: Path, after: str) -> Path:
    text = SUITE.read_text()
    assert text.count(AFTER) == 1
    path = tmp_path / "suite.toml"
    path.write_text(text.replace(AFTER, f"{AFTER}after = {after}\n"))
    return path


def test_fit_run_after_names_pairs_and_numbers_the_fit_runs(tmp_path: Path) -> None:
    assert load_suite(SUITE).fit_after == () and load_suite(SUITE).fit_names == ("fit-step-profile",)
    suite = load_suite(_with_after(tmp_path, '["hol-blocking-continuous", "chat-small-static-held"]'))
    assert suite.fit_after == ("hol-blocking-continuous", "chat-small-static-held")
    assert suite.fit_names == ("fit-step-profile", "fit-step-profile-2", "fit-step-profile-3")


@pytest.mark.parametrize(
    ("after", "says"),
    [
        ('["no-such-pair"]', "field 'after': unknown pair 'no-such-pair'"),
        ('["multi-turn-prefix", "multi-turn-prefix"]', "field 'after': pair 'multi-turn-prefix' given twice"),
        ('"multi-turn-prefix"', "field 'after': not a list of strings"),
        ('["multi-turn-prefix", 3]', "field 'after': not a list of strings"),
    ],
)
def test_a_bad_fit_run_after_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], after: str, says: str
) -> None:
    bad = _with_after(tmp_path, after)
    runs = tmp_path / "runs"
    assert main(["sim", "fidelity", "--suite", str(bad), "--runs", str(runs), "--measure"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and says in err and f"{bad}: fit_run" in err, err
    assert not runs.exists()


def test_measure_runs_a_fit_run_after_each_named_pair_and_pools_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.simulation
    from harness.fidelity_suite import measure as measuring

    suite = load_suite(_with_after(tmp_path, '["chat-small-static-held", "kv-pressure-preempt"]'))
    runs = tmp_path / "runs"
    ran: list[str] = []

    def run(command: list[str], lock: Path | None, what: str) -> None:  # a fake `batchmark run`: records its --out
        out = Path(command[command.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "metrics.json").write_text("{}")
        ran.append(out.name)

    fitted: list[tuple[list[str], list[str]]] = []

    class Fitted:
        def save(self, path: Path) -> None:
            path.write_text("{}")

    def fit_run(dirs: list[Path], engines: list[str]) -> Fitted:
        assert all((d / "metrics.json").is_file() for d in dirs)  # fitted once every fit run is recorded
        fitted.append(([d.name for d in dirs], list(engines)))
        return Fitted()

    monkeypatch.setattr(measuring, "_run", run)
    monkeypatch.setattr(harness.simulation, "fit_run", fit_run)
    measuring.measure(suite, runs, None)
    names = [p.name for p in suite.pairs]  # kv-pressure-preempt is the 3rd pair, chat-small-static-held the 6th
    fits = ["fit-step-profile", "fit-step-profile-2", "fit-step-profile-3"]
    assert ran == [fits[0], *names[:3], fits[1], *names[3:6], fits[2], *names[6:]]
    assert fitted == [(fits, ["continuous"]), (fits, ["static"])]
    ran.clear()
    measuring.measure(suite, runs, None)  # every run and profile recorded: nothing again
    assert ran == [] and len(fitted) == 2
