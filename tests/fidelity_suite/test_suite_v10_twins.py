"""What the tenth pre-registered suite (tests/fixtures/fidelity_suite_v10/suite.toml) was registered to be: the
ninth suite's pairs, engines, profiles, targets and interleaved rounds on a tenth seed, with a second verdict at
each trial's measured speed (`[judge] at_trial_speed`) registered beside the plain one."""

from __future__ import annotations

from pathlib import Path

from harness.fidelity_suite.spec import load_suite
from tests.fidelity_suite.same_protocol import (
    assert_measured_once_a_round_with_speeds,
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels,
    assert_the_last_suite_on_a_new_seed,
    suites_before,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v10"
SUITE = load_suite(HERE / "suite.toml")
NINTH = load_suite(FIXTURES / "fidelity_suite_v9" / "suite.toml")
EARLIER = suites_before(10)


def test_the_tenth_suite_is_the_ninth_s_on_a_new_seed_with_the_at_speed_verdict_beside_the_plain_one() -> None:
    assert SUITE.at_trial_speed and not any(s.at_trial_speed for s in EARLIER)
    assert_the_last_suite_on_a_new_seed(SUITE, NINTH, EARLIER, "9")


def test_every_pair_was_measured_once_a_round_on_one_schedule_with_its_speed_recorded() -> None:
    assert_measured_once_a_round_with_speeds(SUITE, HERE)


def test_its_profiles_are_fitted_fresh_on_the_three_rounds_fit_runs_and_keep_shape_levels() -> None:
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels(SUITE, HERE)
