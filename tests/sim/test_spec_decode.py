import random

import pytest

from engines.errors import EngineInputError
from engines.sim.spec_decode import histogram_from_json


def test_all_accepted_emits_k_plus_one_and_all_rejected_one():
    rng = random.Random(0)
    full = histogram_from_json({"k": 3, "accepted_counts": [0, 0, 0, 5]}, "t")
    none = histogram_from_json({"k": 3, "accepted_counts": [5, 0, 0, 0]}, "t")
    assert {full.draw_emitted(rng) for _ in range(50)} == {4}
    assert {none.draw_emitted(rng) for _ in range(50)} == {1}
    assert full.query_tokens_per_sequence() == 4


@pytest.mark.parametrize(
    "bad",
    [{}, {"k": 0, "accepted_counts": [1]}, {"k": 2, "accepted_counts": [1, 1]}, {"k": 1, "accepted_counts": [0, 0]}],
)
def test_bad_histogram_is_refused(bad):
    with pytest.raises(EngineInputError):
        histogram_from_json(bad, "t")
