"""What the fourth pre-registered suite (tests/fixtures/fidelity_suite_v4/suite.toml) was registered to be: the first
suite's kinds of case on data no earlier suite ran, its version-3 profiles fitted on step-profile-cover, a fit
workload none of its pairs runs. Its table is reproduced from its committed runs by test_suite_twins.py."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v4"
SUITE = load_suite(HERE / "suite.toml")
EARLIER = [
    load_suite(FIXTURES / name / "suite.toml") for name in ("fidelity_suite", "fidelity_suite_v2", "fidelity_suite_v3")
]


def test_the_fourth_suite_is_the_first_s_cases_on_other_data() -> None:
    first = EARLIER[0]
    assert [p.covers.split(" (")[0] for p in SUITE.pairs] == [p.covers.split(" (")[0] for p in first.pairs]
    assert [(p.name, p.engine, p.profile) for p in SUITE.pairs] == [(p.name, p.engine, p.profile) for p in first.pairs]
    assert (SUITE.trials, SUITE.run_args, SUITE.targets) == (first.trials, first.run_args, first.targets)
    for new, *earlier in zip(SUITE.pairs, *(s.pairs for s in EARLIER), strict=True):
        assert new.args not in [p.args for p in earlier], new.name  # nothing an earlier suite measured
    assert SUITE.fit_args == ("--workload", "step-profile-cover", "--seed", "0")  # outside the pairs
    assert all(SUITE.fit_args != s.fit_args for s in EARLIER)
    for profile in SUITE.profiles.values():
        assert load_profile(HERE / "runs" / profile.file).version == 3
    assert not any(a.startswith("step-profile") for p in SUITE.pairs for a in p.args)
