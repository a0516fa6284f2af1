"""docs/ci-example.yml, run as written (fewer trials): its own workload and rules catch an injected
slowdown (every engine step 4x as long), and every rule has data on it (none is judged on a degenerate
window, as the old example's burst was)."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.gate import evaluate, load_rules_file
from harness.gate.inputs import load_runs

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

EXAMPLE = Path(__file__).parents[2] / "docs" / "ci-example.yml"
TRIALS = 4  # per side (the example uses 18): a t-test on 4 trials at the example's alpha 0.01 needs t > 4.5


def example_parts() -> tuple[list[str], str]:
    """The `batchmark run` arguments and the gate.toml the workflow writes."""
    text = EXAMPLE.read_text()
    command = re.search(r"\$bin run (.*?--out \"\$dir\")", text.replace("\\\n", " "), re.S)
    assert command, 'the example\'s benchmark step has no `$bin run ... --out "$dir"`'
    args = shlex.split(command.group(1))[:-2]  # without --out "$dir"
    rules = re.search(r"cat > gate.toml <<'TOML'\n(.*?)\n\s*TOML\n", text, re.S)
    assert rules, "the example writes no gate.toml"
    return args, textwrap.dedent(rules.group(1))


def test_the_ci_example_catches_a_slowdown_on_its_own_workload(tmp_path: Path) -> None:
    args, rules = example_parts()
    assert "--engine" in args and "--rate" in args
    engine = args[args.index("--engine") + 1]
    slow = [*args]
    slow[args.index("--engine") + 1] = f"{engine}:slowdown=3.0"  # every engine step 4x as long
    base_dirs, cand_dirs = [], []
    for i in range(TRIALS):
        order = (("base", args, base_dirs), ("pr", slow, cand_dirs))
        for side, argv, dirs in order if i % 2 == 0 else order[::-1]:
            out = tmp_path / f"{side}-{i}"
            assert main(["run", *argv, "--out", str(out)]) == 0
            dirs.append(out)
    (tmp_path / "gate.toml").write_text(rules)
    config = load_rules_file(tmp_path / "gate.toml")
    verdict = evaluate(config, load_runs(base_dirs), load_runs(cand_dirs))
    status = {r.rule: r.status for r in verdict.results}
    assert "no_data" not in status.values(), {r.rule: r.note for r in verdict.results}
    assert verdict.exit_code == 1 and verdict.settings["unit"] == "trial"
    assert status["tpot.p50 <= +5%"] == "fail", status
    # the throughput rule sees the drop (past its threshold); with 4 noisy trials at alpha 0.01 it may
    # not be significant on its own, which the example's 18 trials are for
    throughput = next(r for r in verdict.results if r.rule == "output_tok_s >= -5%")
    assert throughput.past_threshold and throughput.change < -0.05, throughput
    # no error in these 4 x 32 requests bounds the error rate by 3.5% (exact, alpha 0.01): cannot tell yet;
    # the example's 18 trials (576 requests) bound it by 0.8%, inside the limit
    errors = next(r for r in verdict.results if r.rule == "error_rate <= 1%")
    assert errors.status == "inconclusive" and errors.candidate == 0 and errors.ci_high > 0.01, errors
