"""What the third pre-registered suite (tests/fixtures/fidelity_suite_v3/suite.toml) was registered to be: the first
suite's kinds of case on data neither earlier suite ran, its version-3 profiles fitted on a workload none of its
pairs runs. Its table is reproduced from its committed runs by test_suite_twins.py, with the other suites'."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v3"
SUITE = load_suite(HERE / "suite.toml")
FIRST = load_suite(FIXTURES / "fidelity_suite" / "suite.toml")
SECOND = load_suite(FIXTURES / "fidelity_suite_v2" / "suite.toml")


def test_the_third_suite_is_the_first_s_cases_on_other_data() -> None:
    assert [p.covers.split(" (")[0] for p in SUITE.pairs] == [p.covers.split(" (")[0] for p in FIRST.pairs]
    assert [(p.name, p.engine, p.profile) for p in SUITE.pairs] == [(p.name, p.engine, p.profile) for p in FIRST.pairs]
    assert (SUITE.trials, SUITE.run_args, SUITE.targets) == (FIRST.trials, FIRST.run_args, FIRST.targets)
    for new, first, second in zip(SUITE.pairs, FIRST.pairs, SECOND.pairs, strict=True):
        assert new.args not in (first.args, second.args), new.name  # nothing either earlier suite measured
    assert SUITE.fit_args == ("--workload", "step-profile-wide", "--seed", "1")  # outside the pairs, a new draw
    for profile in SUITE.profiles.values():
        assert load_profile(HERE / "runs" / profile.file).version == 3
    assert not any(a.startswith("step-profile") for p in SUITE.pairs for a in p.args)
