"""What the seventh pre-registered suite (tests/fixtures/fidelity_suite_v7/suite.toml) was registered to be: the
sixth suite's protocol on a seventh seed, its profiles fitted with replayed noise kept per step class (their
`step_class_factors`). Its table is reproduced from its committed runs by test_suite_twins.py."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from engines.sim.noise import STEP_CLASSES
from harness.fidelity_suite.spec import load_suite
from tests.fidelity_suite.same_protocol import assert_same_protocol_on_a_new_seed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v7"
SUITE = load_suite(HERE / "suite.toml")
NAMES = ("fidelity_suite", "fidelity_suite_v2", "fidelity_suite_v3", "fidelity_suite_v4", "fidelity_suite_v5")
EARLIER = [load_suite(FIXTURES / name / "suite.toml") for name in (*NAMES, "fidelity_suite_v6")]


def test_the_seventh_suite_is_the_sixth_s_protocol_on_other_data() -> None:
    assert_same_protocol_on_a_new_seed(SUITE, EARLIER, "6")


def test_its_profiles_keep_a_noise_level_per_step_class_and_the_sixth_s_do_not() -> None:
    for profile in SUITE.profiles.values():
        fitted = load_profile(HERE / "runs" / profile.file)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(SUITE.fit_name) == 3, profile.name
        bins = sum(1 for k in fitted.noise if k.startswith("step_ratio_"))
        assert len(fitted.noise["step_class_factors"]) == bins * STEP_CLASSES, profile.name
        earlier = load_profile(FIXTURES / "fidelity_suite_v6" / "runs" / profile.file)
        assert "step_class_factors" not in earlier.noise, profile.name
