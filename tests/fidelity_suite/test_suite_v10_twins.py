"""What the tenth pre-registered suite (tests/fixtures/fidelity_suite_v10/suite.toml) was registered to be: the
ninth suite's pairs, engines, profiles, targets and interleaved rounds on a tenth seed, with a second verdict at
each trial's measured speed (`[judge] at_trial_speed`) registered beside the plain one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite
from tests.fidelity_suite.same_protocol import suites_before

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v10"
SUITE = load_suite(HERE / "suite.toml")
NINTH = load_suite(FIXTURES / "fidelity_suite_v9" / "suite.toml")
EARLIER = suites_before(10)


def test_the_tenth_suite_is_the_ninth_s_on_a_new_seed_with_the_at_speed_verdict_beside_the_plain_one() -> None:
    assert SUITE.at_trial_speed and not any(s.at_trial_speed for s in EARLIER)
    assert [(p.name, p.covers, p.engine, p.profile) for p in SUITE.pairs] == [
        (p.name, p.covers, p.engine, p.profile) for p in NINTH.pairs
    ]
    for new, old in zip(SUITE.pairs, NINTH.pairs, strict=True):
        assert new.args[:-1] == old.args[:-1] and new.args[-2:] == ("--seed", "9"), new.name
        assert new.args not in [p.args for s in EARLIER for p in s.pairs], new.name  # nothing measured before
    assert (SUITE.trials, SUITE.run_args, SUITE.targets, SUITE.interleave) == (
        NINTH.trials,
        NINTH.run_args,
        NINTH.targets,
        NINTH.interleave,
    )
    assert (SUITE.fit_name, SUITE.fit_args, SUITE.fit_after, SUITE.fit_names) == (
        NINTH.fit_name,
        NINTH.fit_args,
        NINTH.fit_after,
        NINTH.fit_names,
    )
    assert {n: (p.file, p.engine) for n, p in SUITE.profiles.items()} == {
        n: (p.file, p.engine) for n, p in NINTH.profiles.items()
    }


def test_every_pair_was_measured_once_a_round_on_one_schedule_with_its_speed_recorded() -> None:
    for pair in SUITE.pairs:
        dirs = [HERE / "runs" / name for name in SUITE.pair_runs(pair)]
        assert len(dirs) == 3 and all((d / "metrics.json").is_file() for d in dirs), pair.name
        assert len({(d / "requests.jsonl").read_bytes() for d in dirs}) == 1, pair.name
        profile = HERE / "runs" / SUITE.profiles[pair.profile].file
        digest = hashlib.sha256(profile.read_bytes()).hexdigest()
        for d in dirs:
            speeds = json.loads((d / "speeds.json").read_text())
            assert speeds["profile_sha256"] == digest and len(speeds["speeds"]) == 1, d.name


def test_its_profiles_are_fitted_fresh_on_the_three_rounds_fit_runs_and_keep_shape_levels() -> None:
    for profile in SUITE.profiles.values():
        fitted = load_profile(HERE / "runs" / profile.file)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(SUITE.fit_name) == 3, profile.name
        assert "step_class_factors" in fitted.noise and fitted.fit.get("shape_levels"), profile.name
