"""What the sixth pre-registered suite (tests/fixtures/fidelity_suite_v6/suite.toml) was registered to be: the fifth
suite's protocol (its cases, fit workload, three pooled fit runs, profile form, targets) on a sixth seed, measured with
nothing else of its session running. Its table is reproduced from its committed runs by test_suite_twins.py."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v6"
SUITE = load_suite(HERE / "suite.toml")
EARLIER = [
    load_suite(FIXTURES / name / "suite.toml")
    for name in ("fidelity_suite", "fidelity_suite_v2", "fidelity_suite_v3", "fidelity_suite_v4", "fidelity_suite_v5")
]


def test_the_sixth_suite_is_the_fifth_s_protocol_on_other_data() -> None:
    fifth = EARLIER[-1]
    assert [p.covers for p in SUITE.pairs] == [p.covers for p in fifth.pairs]
    assert [(p.name, p.engine, p.profile) for p in SUITE.pairs] == [(p.name, p.engine, p.profile) for p in fifth.pairs]
    assert (SUITE.trials, SUITE.run_args, SUITE.targets) == (fifth.trials, fifth.run_args, fifth.targets)
    assert (SUITE.fit_name, SUITE.fit_args, SUITE.fit_after) == (fifth.fit_name, fifth.fit_args, fifth.fit_after)
    assert SUITE.fit_names == fifth.fit_names
    for new, *earlier in zip(SUITE.pairs, *(s.pairs for s in EARLIER), strict=True):
        assert new.args not in [p.args for p in earlier], new.name  # nothing an earlier suite measured
        assert new.args[-2:] == ("--seed", "5"), new.name
        assert new.args[:-1] == earlier[-1].args[:-1], new.name  # v5's pair but for its seed
    assert {(p.name, p.file, p.engine) for p in SUITE.profiles.values()} == {
        (p.name, p.file, p.engine) for p in fifth.profiles.values()
    }


def test_its_profiles_are_version_3_on_every_fit_run() -> None:
    for profile in SUITE.profiles.values():
        fitted = load_profile(HERE / "runs" / profile.file)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(SUITE.fit_name) == 3, profile.name
