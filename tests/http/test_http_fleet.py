"""An HTTP engine naming the fleet behind its URL (`router=`, `replicas=`): checked, and recorded."""

from __future__ import annotations

import pytest

from harness.engine_specs import build_engine, parse_engine_specs
from harness.errors import user_errors

URL = "http:url=http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (",router=fastest,replicas=2", "fastest"),
        (",router=round_robin,replicas=0", "replicas"),
        (",router=round_robin,replicas=two", "replicas"),
        (",router=round_robin", "replicas="),
        (",replicas=2", "router="),
    ],
)
def test_bad_fleet_options_are_one_line_naming_the_field(extra: str, named: str) -> None:
    with pytest.raises(user_errors()) as caught:
        parse_engine_specs([URL + extra], {})
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_the_fleet_is_recorded_in_the_engine_description() -> None:
    (spec,) = parse_engine_specs([URL + ",router=power_of_two,replicas=2,label=p2"], {})
    options = build_engine(spec, None).describe()["options"]
    assert options["router"] == "power_of_two" and options["replicas"] == 2
    (plain,) = parse_engine_specs([URL], {})
    options = build_engine(plain, None).describe()["options"]
    assert options["router"] is None and options["replicas"] is None  # one server, as before
