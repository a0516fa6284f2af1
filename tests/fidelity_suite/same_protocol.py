"""A later pre-registered suite that keeps its predecessor's protocol and changes only its data (and what its
README names): the check each such suite's registration test makes."""

from __future__ import annotations

from pathlib import Path

from harness.fidelity_suite.spec import Suite, load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def suite_version(suite_dir: Path) -> int:
    """fidelity_suite: 1, fidelity_suite_vN: N."""
    return int(suite_dir.name.removeprefix("fidelity_suite").removeprefix("_v") or 1)


def suites_before(version: int) -> list[Suite]:
    """Every committed suite registered before suite `version`, in order (a later one does not change them)."""
    paths = [p for p in FIXTURES.glob("fidelity_suite*/suite.toml") if suite_version(p.parent) < version]
    return [load_suite(p) for p in sorted(paths, key=lambda p: suite_version(p.parent))]


def assert_same_protocol_on_a_new_seed(suite: Suite, earlier: list[Suite], seed: str) -> None:
    """`suite` is `earlier[-1]`'s protocol (cases, engines, profiles, trials, targets, fit runs) with every pair's
    seed set to `seed`, and no pair an earlier suite measured."""
    last = earlier[-1]
    assert [p.covers for p in suite.pairs] == [p.covers for p in last.pairs]
    assert [(p.name, p.engine, p.profile) for p in suite.pairs] == [(p.name, p.engine, p.profile) for p in last.pairs]
    assert (suite.trials, suite.run_args, suite.targets) == (last.trials, last.run_args, last.targets)
    assert (suite.fit_name, suite.fit_args, suite.fit_after) == (last.fit_name, last.fit_args, last.fit_after)
    assert {(p.name, p.file, p.engine) for p in suite.profiles.values()} == {
        (p.name, p.file, p.engine) for p in last.profiles.values()
    }
    for new, *before in zip(suite.pairs, *(s.pairs for s in earlier), strict=True):
        assert new.args not in [p.args for p in before], new.name  # nothing an earlier suite measured
        assert new.args[-2:] == ("--seed", seed), new.name
        assert new.args[:-1] == before[-1].args[:-1], new.name  # the last suite's pair but for its seed
