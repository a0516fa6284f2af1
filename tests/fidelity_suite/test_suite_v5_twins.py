"""What the fifth pre-registered suite (tests/fixtures/fidelity_suite_v5/suite.toml) was registered to be: the
fourth suite's cases, fit workload and profile form on a fifth seed, its fit run run three times over the session
(before the pairs, after the 3rd, after the 6th) and pooled. Its table is reproduced from its committed runs by
test_suite_twins.py once they are measured."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v5"
SUITE = load_suite(HERE / "suite.toml")
EARLIER = [
    load_suite(FIXTURES / name / "suite.toml")
    for name in ("fidelity_suite", "fidelity_suite_v2", "fidelity_suite_v3", "fidelity_suite_v4")
]


def test_the_fifth_suite_is_the_fourth_s_cases_on_other_data() -> None:
    fourth = EARLIER[-1]
    assert [p.covers.split(" (")[0] for p in SUITE.pairs] == [p.covers.split(" (")[0] for p in fourth.pairs]
    assert [(p.name, p.engine, p.profile) for p in SUITE.pairs] == [(p.name, p.engine, p.profile) for p in fourth.pairs]
    assert (SUITE.trials, SUITE.run_args, SUITE.targets) == (fourth.trials, fourth.run_args, fourth.targets)
    for new, *earlier in zip(SUITE.pairs, *(s.pairs for s in EARLIER), strict=True):
        assert new.args not in [p.args for p in earlier], new.name  # nothing an earlier suite measured
        assert new.args[-2:] == ("--seed", "4"), new.name
        assert new.args[:-1] == earlier[-1].args[:-1], new.name  # v4's pair but for its seed
    assert (SUITE.fit_name, SUITE.fit_args) == (fourth.fit_name, fourth.fit_args)  # outside the pairs
    assert not any(a.startswith("step-profile") for p in SUITE.pairs for a in p.args)
    assert {(p.name, p.file, p.engine) for p in SUITE.profiles.values()} == {
        (p.name, p.file, p.engine) for p in fourth.profiles.values()
    }


def test_the_fit_run_is_run_three_times_over_the_session_and_pooled() -> None:
    names = [p.name for p in SUITE.pairs]
    assert SUITE.fit_after == (names[2], names[5])  # after the 3rd and the 6th pair
    assert SUITE.fit_names == ("fit-step-profile-cover", "fit-step-profile-cover-2", "fit-step-profile-cover-3")
    assert all(s.fit_after == () for s in EARLIER)  # the earlier suites fitted on one fit run


def test_its_profiles_once_measured_are_version_3_on_every_fit_run() -> None:
    for profile in SUITE.profiles.values():
        path = HERE / "runs" / profile.file
        if not path.is_file():  # registered before measuring: no runs yet
            continue
        fitted = load_profile(path)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(SUITE.fit_name) == 3, profile.name
