"""`[judge] at_trial_speed_shapes = "measured"`: the at-speed twins scale by (1 + the trial's speed) only the steps of
the shapes that speed was measured on (the profile's fit-run shape levels), every other step at its plain price.
Replayed on the eleventh suite's azure-code-static (its committed rounds and profile), where four padded prefills of
no fit-run shape are most of the busy time and its speed was measured on its decode steps alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import load_suite
from harness.fidelity_suite.table import format_table, suite_table
from tests.fidelity_suite.refusal import assert_refused

V11 = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity_suite_v11"
PAIR = "azure-code-static"
REGISTERED = "\n[judge]\nat_trial_speed = true\n"
PRICED_BY_PREFILLS = ("TTFT p50", "TTFT p99", "E2E p50", "E2E p99")  # the latencies its unscaled prefills move
DECODE_ONLY = ("TPOT p50", "TPOT p99")  # between tokens of a static batch: decode steps, every one of a known shape


def _suite_file(tmp_path: Path, judge: str) -> Path:
    """v11's suite file with only PAIR, and `judge`'s lines in place of `at_trial_speed = true` (its runs are v11's)."""
    head, *blocks = (V11 / "suite.toml").read_text().split("[[pairs]]\n")
    kept = [b for b in blocks if f'name = "{PAIR}"\n' in b]
    assert len(kept) == 1 and head.count(REGISTERED) == 1
    path = tmp_path / "suite.toml"
    path.write_text(head.replace(REGISTERED, f"\n[judge]\n{judge}") + f"[[pairs]]\n{kept[0]}")
    return path


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The one-pair table of each `at_trial_speed_shapes` (unset, "all", "measured"), replayed on v11's runs."""
    tmp = tmp_path_factory.mktemp("shapes")
    for key in ("unset", "all", "measured"):
        (tmp / key).mkdir()
    judges = {
        "unset": "at_trial_speed = true\n",
        "all": 'at_trial_speed = true\nat_trial_speed_shapes = "all"\n',
        "measured": 'at_trial_speed = true\nat_trial_speed_shapes = "measured"\n',
    }
    suites = {key: load_suite(_suite_file(tmp / key, judge)) for key, judge in judges.items()}
    assert [s.at_trial_speed_shapes for s in suites.values()] == ["all", "all", "measured"]
    return {key: suite_table(suite, V11 / "runs", simulate_twin) for key, suite in suites.items()}


def _recorded() -> dict:
    expected = json.loads((V11 / "expected.json").read_text())
    return next(p for p in expected["pairs"] if p["pair"] == PAIR)


def test_the_plain_verdict_is_the_recorded_one(tables: dict[str, dict]) -> None:
    got, want = tables["measured"]["pairs"][0], _recorded()
    assert got["rows"] == want["rows"] and got["verdict"] == want["verdict"]
    assert got["sensitivity"] == want["sensitivity"]  # the tipping rule's twins scale every step, as before
    assert got["at_trial_speed"]["speeds"] == want["at_trial_speed"]["speeds"]


def test_all_is_the_registered_verdict_byte_for_byte(tables: dict[str, dict]) -> None:
    assert json.dumps(tables["all"]) == json.dumps(tables["unset"])
    assert format_table(tables["all"]) == format_table(tables["unset"])
    assert tables["unset"]["pairs"][0]["at_trial_speed"] == _recorded()["at_trial_speed"]
    assert "at_trial_speed_shapes" not in tables["unset"] and "measured on" not in format_table(tables["unset"])


def test_its_unscaled_prefills_move_the_at_speed_errors_toward_the_plain_ones(tables: dict[str, dict]) -> None:
    got, every = tables["measured"]["pairs"][0], _recorded()
    plain = {r["metric"]: r["error"] for r in got["rows"]}
    measured = {r["metric"]: r for r in got["at_trial_speed"]["rows"]}
    scaled = {r["metric"]: r for r in every["at_trial_speed"]["rows"]}
    for metric in PRICED_BY_PREFILLS:  # its trials ran 6-29% slower: every step scaled, these rose 10 points more
        assert abs(measured[metric]["error"] - plain[metric]) < 0.01 < abs(scaled[metric]["error"] - plain[metric])
        trial_errors = zip(measured[metric]["trial_errors"], scaled[metric]["trial_errors"], strict=True)
        assert all(m < s - 0.05 for m, s in trial_errors), metric
    for metric in DECODE_ONLY:  # the decode steps the speed was measured on are scaled as before
        assert measured[metric]["trial_errors"] == pytest.approx(scaled[metric]["trial_errors"], abs=1e-3), metric


def test_the_table_and_json_say_the_speed_scaled_only_its_measured_shapes(tables: dict[str, dict]) -> None:
    table = tables["measured"]
    assert table["at_trial_speed_shapes"] == "measured"
    lines = format_table(table).splitlines()
    counts = table["at_trial_speed_verdicts"]
    summary = (
        f"at each trial's measured speed (on the shapes it was measured on): {counts['holds']} hold, "
        f"{counts['fails']} fail, {counts['cannot_tell']} cannot tell (target: 6 of 1 hold): target not met"
    )
    assert summary in lines
    assert any(
        line.startswith('at trial speed on the measured shapes ([judge] at_trial_speed_shapes = "measured")')
        for line in lines
    )


@pytest.mark.parametrize(
    ("judge", "says"),
    [
        ('at_trial_speed = true\nat_trial_speed_shapes = "some"\n', "field 'at_trial_speed_shapes': 'some' is not"),
        ('at_trial_speed = true\nat_trial_speed_shapes = "Measured"\n', "field 'at_trial_speed_shapes': 'Measured'"),
        ("at_trial_speed = true\nat_trial_speed_shapes = true\n", "field 'at_trial_speed_shapes': True is not"),
        (
            'at_trial_speed = true\nat_trial_speed_shapes = ["measured"]\n',
            "field 'at_trial_speed_shapes': ['measured']",
        ),
        ('at_trial_speed = false\nat_trial_speed_shapes = "measured"\n', "field 'at_trial_speed_shapes': only with"),
        ('at_trial_speed_shapes = "all"\n', "field 'at_trial_speed_shapes': only with at_trial_speed = true"),
    ],
)
def test_a_bad_shapes_field_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str, says: str
) -> None:
    assert_refused(capsys, _suite_file(tmp_path, judge), f"judge: {says}")
