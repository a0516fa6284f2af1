"""What the thirteenth pre-registered suite (tests/fixtures/fidelity_suite_v13/suite.toml) was registered to be: the
twelfth suite's pairs, engines, profiles, targets, interleaved rounds, tipping rule and two verdicts (each trial's
speed on the shapes it was measured on) on a thirteenth seed, with one stated change: the fit runs on
`step-profile-cover-3` (named `fit-cover3`), whose static profile so has a level of the giant padded prefill
prefill:14:0 and of the batched decode grid."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import Tipping, load_suite
from tests.fidelity_suite.same_protocol import (
    assert_profiles_fitted_fresh,
    assert_rounds_kept_with_speeds,
    assert_the_last_suite_on_a_new_seed,
    recorded_table_with_the_rule_on_measured_shapes,
    suites_before,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v13"
SUITE = load_suite(HERE / "suite.toml")
TWELFTH = load_suite(FIXTURES / "fidelity_suite_v12" / "suite.toml")
EARLIER = suites_before(13)
# The batched decode shapes step-profile-cover-3 was added to give levels (rows 3-8 at bands 1-4)
DECODE_GRID = {f"decode:{rows}:{band}" for rows in range(3, 9) for band in range(1, 5)}


def test_the_thirteenth_suite_is_the_twelfth_s_on_a_new_seed_with_the_cover3_fit() -> None:
    assert SUITE.tipping == TWELFTH.tipping == Tipping(elasticity=3.0, fraction=0.1)
    assert SUITE.at_trial_speed and TWELFTH.at_trial_speed
    assert SUITE.at_trial_speed_shapes == TWELFTH.at_trial_speed_shapes == "measured"
    assert TWELFTH.fit_args == ("--workload", "step-profile-cover-2", "--seed", "0")
    assert_the_last_suite_on_a_new_seed(
        SUITE, TWELFTH, EARLIER, "12", fit_run=("fit-cover3", ("--workload", "step-profile-cover-3", "--seed", "0"))
    )
    assert SUITE.fit_names == ("fit-cover3", "fit-cover3-2", "fit-cover3-3")


def test_every_pair_was_measured_once_a_round_on_one_schedule_with_its_speed_recorded() -> None:
    assert_rounds_kept_with_speeds(SUITE, HERE)  # the twelfth's fixture keeps the same files, no fit run


def test_its_profiles_are_fitted_fresh_on_the_three_cover3_fit_runs_with_the_grid_s_levels() -> None:
    assert_profiles_fitted_fresh(SUITE, HERE, FIXTURES / "fidelity_suite_v12")
    static = load_profile(HERE / "runs" / SUITE.profiles["static"].file).fit["shape_levels"]
    twelfth = load_profile(FIXTURES / "fidelity_suite_v12" / "runs" / "profile-static.json").fit["shape_levels"]
    assert "prefill:14:0" in static and "prefill:14:0" not in twelfth  # what step-profile-cover-3 was added for
    assert {"prefill:12:0", "prefill:13:0"} <= set(static)  # cover-2's padded prefills kept
    assert len(DECODE_GRID & set(static)) > len(DECODE_GRID & set(twelfth))  # the batched decode grid filled in


def test_the_recorded_table_carries_the_registered_rule_and_the_speed_on_measured_shapes() -> None:
    expected = recorded_table_with_the_rule_on_measured_shapes(HERE)
    # As recorded: plain 2 hold / 6 fail / 1 cannot tell, at each trial's speed 0 / 9 / 0; both targets not met
    assert expected["verdicts"] == {"holds": 2, "fails": 6, "cannot_tell": 1} and expected["target"] == "not met"
    assert expected["at_trial_speed_verdicts"] == {"holds": 0, "fails": 9, "cannot_tell": 0}
