"""A later pre-registered suite that keeps its predecessor's protocol and changes only its data (and what its
README names): the check each such suite's registration test makes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import Suite, load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def suite_version(suite_dir: Path) -> int:
    """fidelity_suite: 1, fidelity_suite_vN: N."""
    return int(suite_dir.name.removeprefix("fidelity_suite").removeprefix("_v") or 1)


def suites_before(version: int) -> list[Suite]:
    """Every committed suite registered before suite `version`, in order (a later one does not change them)."""
    paths = [p for p in FIXTURES.glob("fidelity_suite*/suite.toml") if suite_version(p.parent) < version]
    return [load_suite(p) for p in sorted(paths, key=lambda p: suite_version(p.parent))]


def assert_same_protocol_on_a_new_seed(suite: Suite, earlier: list[Suite], seed: str) -> None:
    """`suite` is `earlier[-1]`'s protocol (cases, engines, profiles, trials, targets, fit runs) with every pair's
    seed set to `seed`, and no pair an earlier suite measured."""
    last = earlier[-1]
    assert [p.covers for p in suite.pairs] == [p.covers for p in last.pairs]
    assert [(p.name, p.engine, p.profile) for p in suite.pairs] == [(p.name, p.engine, p.profile) for p in last.pairs]
    assert (suite.trials, suite.run_args, suite.targets) == (last.trials, last.run_args, last.targets)
    assert (suite.fit_name, suite.fit_args, suite.fit_after) == (last.fit_name, last.fit_args, last.fit_after)
    assert {(p.name, p.file, p.engine) for p in suite.profiles.values()} == {
        (p.name, p.file, p.engine) for p in last.profiles.values()
    }
    for new, *before in zip(suite.pairs, *(s.pairs for s in earlier), strict=True):
        assert new.args not in [p.args for p in before], new.name  # nothing an earlier suite measured
        assert new.args[-2:] == ("--seed", seed), new.name
        assert new.args[:-1] == before[-1].args[:-1], new.name  # the last suite's pair but for its seed


def assert_the_last_suite_on_a_new_seed(
    suite: Suite, last: Suite, earlier: list[Suite], seed: str, fit_run: tuple[str, tuple[str, ...]] | None = None
) -> None:
    """`suite` is `last`'s pairs in order, engines, profiles, trials, run options, targets, rounds and fit runs, with
    every pair's seed set to `seed` and no pair any `earlier` suite measured (its `[judge]` is checked beside).
    `fit_run`: the fit run's (name, args) where the suite's registration states it changed them (then they must
    differ from `last`'s, and the fit runs keep `last`'s placement and count under the new name); None: unchanged."""
    assert [(p.name, p.covers, p.engine, p.profile) for p in suite.pairs] == [
        (p.name, p.covers, p.engine, p.profile) for p in last.pairs
    ]
    for new, old in zip(suite.pairs, last.pairs, strict=True):
        assert new.args[:-1] == old.args[:-1] and new.args[-2:] == ("--seed", seed), new.name
        assert new.args not in [p.args for s in earlier for p in s.pairs], new.name  # nothing measured before
    assert (suite.trials, suite.run_args, suite.targets, suite.interleave) == (
        last.trials,
        last.run_args,
        last.targets,
        last.interleave,
    )
    if fit_run is None:
        assert (suite.fit_name, suite.fit_args, suite.fit_after, suite.fit_names) == (
            last.fit_name,
            last.fit_args,
            last.fit_after,
            last.fit_names,
        )
    else:
        assert fit_run[0] != last.fit_name and fit_run[1] != last.fit_args  # a stated change, not a rename alone
        assert (suite.fit_name, suite.fit_args, suite.fit_after) == (*fit_run, last.fit_after)
        assert [n.removeprefix(suite.fit_name) for n in suite.fit_names] == [
            n.removeprefix(last.fit_name) for n in last.fit_names
        ]
    assert {n: (p.file, p.engine) for n, p in suite.profiles.items()} == {
        n: (p.file, p.engine) for n, p in last.profiles.items()
    }


def assert_measured_once_a_round_with_speeds(suite: Suite, here: Path) -> None:
    """Every pair of the suite in `here` measured once a round on one schedule, each round's speed recorded against
    the pair's committed profile."""
    for pair in suite.pairs:
        dirs = [here / "runs" / name for name in suite.pair_runs(pair)]
        assert len(dirs) == 3 and all((d / "metrics.json").is_file() for d in dirs), pair.name
        assert len({(d / "requests.jsonl").read_bytes() for d in dirs}) == 1, pair.name
        profile = here / "runs" / suite.profiles[pair.profile].file
        digest = hashlib.sha256(profile.read_bytes()).hexdigest()
        for d in dirs:
            speeds = json.loads((d / "speeds.json").read_text())
            assert speeds["profile_sha256"] == digest and len(speeds["speeds"]) == 1, d.name


def assert_profiles_fitted_on_three_fit_runs_with_shape_levels(suite: Suite, here: Path) -> None:
    for profile in suite.profiles.values():
        fitted = load_profile(here / "runs" / profile.file)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(suite.fit_name) == 3, profile.name
        assert "step_class_factors" in fitted.noise and fitted.fit.get("shape_levels"), profile.name


# The round files a suite's fixture keeps (the step traces and records stay with the measurement)
KEPT = {"manifest.json", "metrics.json", "requests.jsonl", "speeds.json"}


def assert_rounds_kept_with_speeds(suite: Suite, here: Path) -> None:
    """Each pair measured once a round on one schedule with its speed recorded, the fixture keeping every pair's
    rounds (KEPT's files each) and no fit run."""
    assert_measured_once_a_round_with_speeds(suite, here)
    rounds = {name for pair in suite.pairs for name in suite.pair_runs(pair)}
    assert {d.name for d in (here / "runs").iterdir() if d.is_dir()} == rounds  # no fit run kept
    for name in rounds:
        assert {f.name for f in (here / "runs" / name).iterdir()} == KEPT, name


def assert_profiles_fitted_fresh(suite: Suite, here: Path, last_here: Path) -> None:
    """The suite's profiles fitted on its own three fit runs (with shape levels), not the last suite's files."""
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels(suite, here)
    for profile in suite.profiles.values():
        assert (here / "runs" / profile.file).read_bytes() != (last_here / "runs" / profile.file).read_bytes()
        fitted = load_profile(here / "runs" / profile.file)
        assert [Path(p).name for p in fitted.fit["run_dir"].split(", ")] == list(suite.fit_names), profile.name


def recorded_table_with_the_rule_on_measured_shapes(here: Path) -> dict:
    """The suite's expected.json, checked to carry the registered tipping rule (elasticity 3 at +-0.1, every pair)
    and the speed on measured shapes."""
    expected = json.loads((here / "expected.json").read_text())
    assert expected["tipping_rule"] == {"elasticity": 3.0, "sensitivity": 0.1}
    assert expected["at_trial_speed_shapes"] == "measured"
    for pair in expected["pairs"]:
        assert pair["sensitivity"]["threshold"] == 3.0 and pair["sensitivity"]["fraction"] == 0.1, pair["pair"]
    return expected
