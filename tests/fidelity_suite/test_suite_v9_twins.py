"""What the ninth pre-registered suite (tests/fixtures/fidelity_suite_v9/suite.toml) was registered to be: the eighth
suite's pairs in their order on a ninth seed, measured interleaved (three rounds, each a fit run and one trial of
every pair). Its table is reproduced from its committed runs by test_suite_twins.py."""

from __future__ import annotations

from pathlib import Path

from engines.sim.fitted import load_profile
from harness.fidelity_suite.spec import load_suite
from tests.fidelity_suite.same_protocol import suites_before

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "fidelity_suite_v9"
SUITE = load_suite(HERE / "suite.toml")
EARLIER = suites_before(9)


def test_the_ninth_suite_is_the_eighth_s_pairs_on_a_new_seed_measured_in_rounds() -> None:
    eighth = load_suite(FIXTURES / "fidelity_suite_v8" / "suite.toml")
    assert SUITE.interleave and not any(s.interleave for s in EARLIER) and len(EARLIER) == 8
    assert [(p.name, p.covers, p.engine, p.profile) for p in SUITE.pairs] == [
        (p.name, p.covers, p.engine, p.profile) for p in eighth.pairs
    ]
    for new, old in zip(SUITE.pairs, eighth.pairs, strict=True):
        assert new.args[:-1] == old.args[:-1] and new.args[-2:] == ("--seed", "8"), new.name
        assert new.args not in [p.args for s in EARLIER for p in s.pairs], new.name  # nothing measured before
    assert (SUITE.trials, SUITE.run_args, SUITE.targets) == (eighth.trials, eighth.run_args, eighth.targets)
    assert (SUITE.fit_name, SUITE.fit_args, SUITE.fit_after) == (eighth.fit_name, eighth.fit_args, ())
    assert len(SUITE.fit_names) == SUITE.trials  # one fit run a round


def test_every_pair_was_measured_once_a_round_on_one_schedule() -> None:
    for pair in SUITE.pairs:
        dirs = [HERE / "runs" / name for name in SUITE.pair_runs(pair)]
        assert len(dirs) == 3 and all((d / "metrics.json").is_file() for d in dirs), pair.name
        requests = {(d / "requests.jsonl").read_bytes() for d in dirs}
        assert len(requests) == 1, pair.name


def test_its_profiles_are_fitted_on_the_three_rounds_fit_runs() -> None:
    for profile in SUITE.profiles.values():
        fitted = load_profile(HERE / "runs" / profile.file)
        assert fitted.version == 3 and fitted.fit["run_dir"].count(SUITE.fit_name) == 3, profile.name
        assert "step_class_factors" in fitted.noise, profile.name
