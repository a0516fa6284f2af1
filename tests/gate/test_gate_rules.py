"""The rules grammar and the rules file: every mistake is one line naming the file, the line and the field."""

from __future__ import annotations

import pytest

from harness.errors import HarnessInputError
from harness.gate import load_rules_file, parse_rule
from harness.gate.rules import RuleError


@pytest.mark.parametrize(
    ("text", "name", "op", "kind", "value"),
    [
        ("ttft.p99 <= +10%", "ttft.p99", "<=", "relative", 0.10),
        ("goodput >= -5%", "goodput", ">=", "relative", -0.05),
        ("output_tok_s>=-5%", "output_tok_s", ">=", "relative", -0.05),
        ("tpot.p50 <= +5ms", "tpot.p50", "<=", "delta", 0.005),
        ("e2e.mean <= 2s", "e2e.mean", "<=", "absolute", 2.0),
        ("itl.p99.9 <= 250us", "itl.p99.9", "<=", "absolute", 250e-6),
        ("error_rate <= 1%", "error_rate", "<=", "absolute", 0.01),
        ("error_rate <= +1pp", "error_rate", "<=", "delta", 0.01),
        ("slo_attainment >= 0.9", "slo_attainment", ">=", "absolute", 0.9),
        ("request_rate >= 4.5", "request_rate", ">=", "absolute", 4.5),
        ("total_tok_s >= -100", "total_tok_s", ">=", "delta", -100.0),
    ],
)
def test_rules_parse(text, name, op, kind, value):
    rule = parse_rule(text)
    assert (rule.name, rule.op, rule.threshold.kind) == (name, op, kind)
    assert rule.threshold.value == pytest.approx(value)
    assert rule.needs_baseline == (kind != "absolute")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("ttfx.p99 <= +10%", "metric"),
        ("ttft <= +10%", "statistic"),
        ("ttft.p100 <= +10%", "statistic"),
        ("ttft.median <= +10%", "statistic"),
        ("goodput.p50 >= -5%", "statistic"),
        ("ttft.p99 < +10%", "operator"),
        ("ttft.p99 <= 500", "threshold"),  # a time needs its unit
        ("output_tok_s >= -5ms", "threshold"),
        ("ttft.p99 <= -10%", "threshold"),  # an upper bound allows an increase, so its change is signed +
        ("goodput >= +5%", "threshold"),
        ("ttft.p99 <= fast", "threshold"),
        ("just words", "rule"),
        # a limit on a share outside 0..100% holds (or breaks) whatever the runs did (issue #31 audit)
        ("error_rate <= 150%", "threshold"),
        ("error_rate <= 1.5", "threshold"),
        ("slo_attainment >= 101%", "threshold"),
    ],
)
def test_bad_rules_name_the_field(text, field):
    with pytest.raises(RuleError) as info:
        parse_rule(text)
    assert info.value.field == field


GOOD = """\
# a comment
[gate]
alpha = 0.01
engine = "continuous"

rules = [
  "ttft.p99 <= +10%",
  "goodput >= -5%",
]

[[rule]]
check = "tpot.p50 <= +5%"
alpha = 0.05
"""


def test_rules_file_reads_settings_rules_and_lines(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(GOOD)
    config = load_rules_file(path)
    assert config.alpha == 0.01
    assert config.baseline_engine == config.candidate_engine == "continuous"
    assert [r.text for r in config.rules] == ["ttft.p99 <= +10%", "goodput >= -5%", "tpot.p50 <= +5%"]
    assert [r.line for r in config.rules] == [7, 8, 12]
    assert [r.alpha for r in config.rules] == [None, None, 0.05]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD.replace('"goodput >= -5%"', '"goodput >= -5 %x"'), ":8: field rules[1].threshold:"),
        (GOOD.replace('"ttft.p99 <= +10%"', '"ttfx.p99 <= +10%"'), ":7: field rules[0].metric: unknown metric 'ttfx'"),
        (GOOD.replace('check = "tpot.p50 <= +5%"', 'check = "tpot <= +5%"'), ":12: field rule[0].check.statistic:"),
        (GOOD.replace("alpha = 0.01", "alpha = 2.0"), ":3: field gate.alpha:"),
        (GOOD.replace("alpha = 0.01", 'alpha = "low"'), ":3: field gate.alpha: expected a float"),
        (GOOD.replace("alpha = 0.01", "alpah = 0.01"), ":3: field gate.alpah: unknown setting"),
        (GOOD.replace("alpha = 0.05", "colour = 1"), ":13: field rule[0].colour: unknown key"),
        (GOOD.replace('"goodput >= -5%",', "42,"), ":8: field rules[1]:"),
        (GOOD.replace("alpha = 0.01", "alpha = = 0.01"), ":3: field alpha: not valid TOML"),
        ("[gate]\nalpha = 0.05\n", ":?: field rules: the file holds no rule"),
        (GOOD + "\n[extra]\nx = 1\n", ":15: field extra: unknown table"),
        # an SLO for goodput and slo_attainment that no latency can meet, or every latency meets (#31 audit)
        (GOOD.replace("alpha = 0.01", "slo_ttft_ms = nan"), ":3: field gate.slo_ttft_ms: nan must be"),
        (GOOD.replace("alpha = 0.01", "slo_tpot_ms = -5"), ":3: field gate.slo_tpot_ms: -5.0 must be"),
        (GOOD.replace("alpha = 0.01", "slo_e2e_ms = inf"), ":3: field gate.slo_e2e_ms: inf must be"),
        (GOOD.replace("alpha = 0.01", "slo_ttft_ms = 0"), ":3: field gate.slo_ttft_ms: 0.0 must be"),
    ],
)
def test_malformed_rules_file_is_one_line_with_file_line_and_field(tmp_path, text, needle):
    path = tmp_path / "gate.toml"
    path.write_text(text)
    with pytest.raises(HarnessInputError) as info:
        load_rules_file(path)
    message = str(info.value)
    assert message.startswith(str(path)) and needle in message, message
    assert "\n" not in message


def test_missing_rules_file(tmp_path):
    with pytest.raises(HarnessInputError, match="cannot read"):
        load_rules_file(tmp_path / "nope.toml")
