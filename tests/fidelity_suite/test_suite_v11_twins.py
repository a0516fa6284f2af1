"""What the eleventh pre-registered suite (tests/fixtures/fidelity_suite_v11/suite.toml) was registered to be: the
tenth suite's pairs, engines, profiles, targets, interleaved rounds and two verdicts on an eleventh seed, with the
registered tipping rule (`[judge] tipping_elasticity = 3.0`, `sensitivity = 0.1`) in both verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from harness.fidelity_suite.spec import Tipping, load_suite
from tests.fidelity_suite.same_protocol import (
    assert_measured_once_a_round_with_speeds,
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels,
    assert_the_last_suite_on_a_new_seed,
    suites_before,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v11"
SUITE = load_suite(HERE / "suite.toml")
TENTH = load_suite(FIXTURES / "fidelity_suite_v10" / "suite.toml")
EARLIER = suites_before(11)


def test_the_eleventh_suite_is_the_tenth_s_on_a_new_seed_with_the_tipping_rule_in_both_verdicts() -> None:
    assert SUITE.tipping == Tipping(elasticity=3.0, fraction=0.1) and not any(s.tipping for s in EARLIER)
    assert SUITE.at_trial_speed and TENTH.at_trial_speed
    assert_the_last_suite_on_a_new_seed(SUITE, TENTH, EARLIER, "10")


def test_every_pair_was_measured_once_a_round_on_one_schedule_with_its_speed_recorded() -> None:
    assert_measured_once_a_round_with_speeds(SUITE, HERE)


def test_its_profiles_are_fitted_fresh_on_the_three_rounds_fit_runs_and_keep_shape_levels() -> None:
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels(SUITE, HERE)
    for profile in SUITE.profiles.values():  # fitted on this suite's own fit runs, not the tenth's file
        tenth = FIXTURES / "fidelity_suite_v10" / "runs" / profile.file
        assert (HERE / "runs" / profile.file).read_bytes() != tenth.read_bytes(), profile.name


def test_the_recorded_table_carries_the_registered_rule() -> None:
    expected = json.loads((HERE / "expected.json").read_text())
    assert expected["tipping_rule"] == {"elasticity": 3.0, "sensitivity": 0.1}
    for pair in expected["pairs"]:
        assert pair["sensitivity"]["threshold"] == 3.0 and pair["sensitivity"]["fraction"] == 0.1, pair["pair"]
