import pytest

from harness.errors import HarnessInputError
from harness.metrics.slo_classes import parse_slo_class


def test_parses_targets_in_seconds_and_leaves_missing_unchecked():
    cls = parse_slo_class("interactive:ttft_ms=1000,tpot_ms=50")
    assert cls.name == "interactive"
    assert cls.slo.ttft_s == 1.0 and cls.slo.tpot_s == 0.05 and cls.slo.e2e_s is None


@pytest.mark.parametrize("bad", ["nocolon", "x:", "x:ttft_ms=nan", "x:ttft_ms=-1", "x:foo=1", "x:ttft_ms=abc"])
def test_bad_spec_is_one_line_error(bad):
    with pytest.raises(HarnessInputError) as err:
        parse_slo_class(bad)
    assert "\n" not in str(err.value)
