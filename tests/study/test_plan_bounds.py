"""Study plans with values of the right shape but no sense (issue #32): each is one line naming the field, exit 2,
and nothing is run or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.study.test_study import GOOD


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("[baseline]", "trials = 1000000000\n[baseline]"), "trials"),
        (("[baseline]", 'seed = "x"\n[baseline]'), "seed"),
        (("[baseline]", "seed = 1.5\n[baseline]"), "seed"),  # was silently 1
        (("[baseline]", "seed = -1\n[baseline]"), "seed"),
        (("[baseline]", "slo_ttft_ms = nan\n[baseline]"), "slo_ttft_ms"),
        (("[baseline]", "slo_ttft_ms = inf\n[baseline]"), "slo_ttft_ms"),
        (('[[variants]]\nname = "fair"\nchange = { policy = "fair" }\n', "variants = 3\n"), "variants"),
        (("held_out = [5, 10]", "held_out = [true, false]"), "slices.held_out"),
        (("tuning = [0, 5]", "tuning = [false, true]"), "slices.tuning"),
        (("held_out = [5, 10]", "held_out = [5, 5]"), "slices.held_out"),  # empty
        (("held_out = [5, 10]", "held_out = [5, inf]"), "slices.held_out"),
        (("held_out = [5, 10]", "held_out = [100000, 200000]"), "slices.held_out"),  # outside the trace
        # the audit's own (docs/measurements/2026-12-06-issue-32-audit.md)
        (("[baseline]", "trials = 0\n[baseline]"), "trials"),
        (("[baseline]", "trials = 2.5\n[baseline]"), "trials"),
        (("[baseline]", "seed = true\n[baseline]"), "seed"),
        (("[baseline]", "seed = 9223372036854775807\n[baseline]"), "seed"),
        (("[baseline]", "slo_ttft_ms = -1\n[baseline]"), "slo_ttft_ms"),
        (('[[variants]]\nname = "fair"\nchange = { policy = "fair" }\n', "variants = [3]\n"), "variants"),
        (("held_out = [5, 10]", "held_out = [10, 5]"), "slices.held_out"),
        (("held_out = [5, 10]", "held_out = [[5, 10]]"), "slices.held_out"),
        (("held_out = [5, 10]", 'held_out = "x"'), "slices.held_out"),
    ],
)
def test_a_senseless_plan_value_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], field: str
) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD, edit
    path = tmp_path / "plan.toml"
    path.write_text(text)
    out = tmp_path / "out"
    assert main(["study", str(path), "--sim", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"field {field}:" in err and str(path) in err, err
    assert not out.exists()  # nothing ran
