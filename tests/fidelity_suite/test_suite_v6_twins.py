"""What the sixth pre-registered suite (tests/fixtures/fidelity_suite_v6/suite.toml) was registered to be: the fifth
suite's protocol (its cases, fit workload, three pooled fit runs, profile form, targets) on a sixth seed, measured with
nothing else of its session running. Its table is reproduced from its committed runs by test_suite_twins.py."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite
from tests.fidelity_suite.same_protocol import assert_same_protocol_on_a_new_seed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v6"
SUITE = load_suite(HERE / "suite.toml")
EARLIER = [
    load_suite(FIXTURES / name / "suite.toml")
    for name in ("fidelity_suite", "fidelity_suite_v2", "fidelity_suite_v3", "fidelity_suite_v4", "fidelity_suite_v5")
]


def test_the_sixth_suite_is_the_fifth_s_protocol_on_other_data() -> None:
    assert_same_protocol_on_a_new_seed(SUITE, EARLIER, "5")


def test_its_profiles_are_version_3_on_every_fit_run() -> None:
    for profile in SUITE.profiles.values():
        fitted = load_profile(HERE / "runs" / profile.file)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(SUITE.fit_name) == 3, profile.name
