"""What the twelfth pre-registered suite (tests/fixtures/fidelity_suite_v12/suite.toml) was registered to be: the
eleventh suite's pairs, engines, profiles, targets, interleaved rounds, tipping rule and two verdicts on a twelfth
seed, with two stated changes: the fit runs on `step-profile-cover-2` (named `fit-cover2`), whose static profile so
has levels of the padded prefill shapes prefill:12:0 and prefill:13:0, and each trial's speed applied only to the
shapes it was measured on (`[judge] at_trial_speed_shapes = "measured"`)."""

from __future__ import annotations

import json
from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import Tipping, load_suite
from tests.fidelity_suite.same_protocol import (
    assert_measured_once_a_round_with_speeds,
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels,
    assert_the_last_suite_on_a_new_seed,
    suites_before,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v12"
SUITE = load_suite(HERE / "suite.toml")
ELEVENTH = load_suite(FIXTURES / "fidelity_suite_v11" / "suite.toml")
EARLIER = suites_before(12)
# The round files a suite's fixture keeps (the step traces and records stay with the measurement)
KEPT = {"manifest.json", "metrics.json", "requests.jsonl", "speeds.json"}


def test_the_twelfth_suite_is_the_eleventh_s_on_a_new_seed_with_the_cover2_fit_and_the_speed_on_its_shapes() -> None:
    assert SUITE.tipping == ELEVENTH.tipping == Tipping(elasticity=3.0, fraction=0.1)
    assert SUITE.at_trial_speed and ELEVENTH.at_trial_speed
    assert SUITE.at_trial_speed_shapes == "measured" and all(s.at_trial_speed_shapes == "all" for s in EARLIER)
    assert ELEVENTH.fit_args == ("--workload", "step-profile-cover", "--seed", "0")
    assert_the_last_suite_on_a_new_seed(
        SUITE, ELEVENTH, EARLIER, "11", fit_run=("fit-cover2", ("--workload", "step-profile-cover-2", "--seed", "0"))
    )
    assert SUITE.fit_names == ("fit-cover2", "fit-cover2-2", "fit-cover2-3")


def test_every_pair_was_measured_once_a_round_on_one_schedule_with_its_speed_recorded() -> None:
    assert_measured_once_a_round_with_speeds(SUITE, HERE)
    rounds = {name for pair in SUITE.pairs for name in SUITE.pair_runs(pair)}
    assert {d.name for d in (HERE / "runs").iterdir() if d.is_dir()} == rounds  # no fit run kept
    for name in rounds:
        assert {f.name for f in (HERE / "runs" / name).iterdir()} == KEPT, name


def test_its_profiles_are_fitted_fresh_on_the_three_cover2_fit_runs_with_the_padded_prefill_levels() -> None:
    assert_profiles_fitted_on_three_fit_runs_with_shape_levels(SUITE, HERE)
    for profile in SUITE.profiles.values():  # fitted on this suite's own fit runs, not the eleventh's file
        eleventh = FIXTURES / "fidelity_suite_v11" / "runs" / profile.file
        assert (HERE / "runs" / profile.file).read_bytes() != eleventh.read_bytes(), profile.name
        fitted = load_profile(HERE / "runs" / profile.file)
        assert [Path(p).name for p in fitted.fit["run_dir"].split(", ")] == list(SUITE.fit_names), profile.name
    static = load_profile(HERE / "runs" / SUITE.profiles["static"].file).fit["shape_levels"]
    eleventh = load_profile(FIXTURES / "fidelity_suite_v11" / "runs" / "profile-static.json").fit["shape_levels"]
    assert {"prefill:12:0", "prefill:13:0"} <= set(static)  # what step-profile-cover-2 was added for
    assert not {"prefill:12:0", "prefill:13:0"} & set(eleventh)  # v11: 7 and 3 such steps, under MIN_STEPS
    assert "prefill:14:0" not in static  # the giant padded prefill azure-code-static's busy time is mostly


def test_the_recorded_table_carries_the_registered_rule_and_the_speed_on_measured_shapes() -> None:
    expected = json.loads((HERE / "expected.json").read_text())
    assert expected["tipping_rule"] == {"elasticity": 3.0, "sensitivity": 0.1}
    assert expected["at_trial_speed_shapes"] == "measured"
    for pair in expected["pairs"]:
        assert pair["sensitivity"]["threshold"] == 3.0 and pair["sensitivity"]["fraction"] == 0.1, pair["pair"]
