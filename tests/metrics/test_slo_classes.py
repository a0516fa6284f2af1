import pytest

from harness.errors import HarnessInputError
from harness.metrics.slo_classes import parse_slo_class


def test_parses_targets_in_seconds_and_leaves_missing_unchecked():
    cls = parse_slo_class("interactive:ttft_ms=1000,tpot_ms=50")
    assert cls.name == "interactive"
    assert cls.slo.ttft_s == 1.0 and cls.slo.tpot_s == 0.05 and cls.slo.e2e_s is None


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("nocolon", "expected NAME:"),
        ("x:", "expected NAME:"),
        (":ttft_ms=5", "expected NAME:"),
        ("x:ttft_ms=nan", "ttft_ms='nan' must be a positive finite number"),
        ("x:ttft_ms=inf", "ttft_ms='inf' must be a positive finite number"),
        ("x:ttft_ms=1e400", "ttft_ms='1e400' must be a positive finite number"),
        ("x:ttft_ms=-1", "ttft_ms='-1' must be a positive finite number"),
        ("x:e2e_ms=0", "e2e_ms='0' must be a positive finite number"),
        ("x:foo=1", "unknown field 'foo'"),
        ("x:ttft_ms=1000,", "unknown field ''"),
        ("x:ttft_ms=abc", "ttft_ms='abc' is not a number"),
        ("x:ttft_ms=1000,ttft_ms=5", "ttft_ms given twice"),  # the last silently won before (issue #33 audit)
    ],
)
def test_bad_spec_is_one_line_error_naming_the_field(bad: str, said: str) -> None:
    with pytest.raises(HarnessInputError) as err:
        parse_slo_class(bad)
    assert "\n" not in str(err.value) and said in str(err.value)
