"""Step features count what the model runner computes: rows by kind, pad rows, attended keys."""

from __future__ import annotations

from engines.api import Request
from engines.plan import Chunk, StepPlan
from engines.sequence import Sequence
from engines.step_features import FEATURE_NAMES, StepFeatures, step_features


def seq(prompt: int, computed: int = 0, outputs: int = 0, max_tokens: int = 8) -> Sequence:
    s = Sequence.from_request(Request("r", list(range(prompt)), max_tokens), 0, 0.0)
    for _ in range(outputs):
        s.append_token(5)
    s.num_computed_tokens = computed
    return s


def test_a_decode_row_attends_its_whole_context() -> None:
    f = step_features(StepPlan([Chunk(seq(10, computed=12, outputs=3), 1, yields_token=True)]))
    assert f == StepFeatures(decode_seqs=1, attended_context=13, kv_read_tokens=12, sampled_rows=1, decode_context=13)


def test_a_prefill_chunk_attends_a_triangle_on_top_of_its_cached_context() -> None:
    # 4 new rows after 6 cached tokens: rows attend 7, 8, 9, 10 keys
    f = step_features(StepPlan([Chunk(seq(10, computed=6), 4, yields_token=True)]))
    assert f == StepFeatures(
        prefill_tokens=4,
        prefill_chunks=1,
        attended_context=34,
        kv_read_tokens=6,
        sampled_rows=1,
        prefill_self_pairs=16,
        prefill_context_pairs=24,
    )  # SDPA with a mask: every key up to 10
    partial = step_features(StepPlan([Chunk(seq(10), 4, yields_token=False)]))
    assert partial.sampled_rows == 0 and partial.attended_context == 10


def test_static_padding_is_counted_apart_from_real_rows() -> None:
    # a static batch's first step: a 3-token prompt padded to 5; later a finished member's pad row
    first = step_features(
        StepPlan([Chunk(seq(3), 3, yields_token=True, num_pad=2), Chunk(seq(5), 5, yields_token=True)])
    )
    assert (first.prefill_tokens, first.padded_rows, first.prefill_chunks, first.rows) == (8, 2, 2, 10)
    assert first.attended_context == (1 + 2 + 3) + 2 * 3 + (1 + 2 + 3 + 4 + 5)
    held = step_features(StepPlan([Chunk(seq(3, computed=6, outputs=4), 0, yields_token=False, num_pad=1)]))
    assert (held.decode_seqs, held.padded_rows, held.sampled_rows, held.attended_context) == (0, 1, 1, 6)


def test_the_names_are_the_fields() -> None:
    assert StepFeatures._fields == FEATURE_NAMES
    assert set(StepFeatures().to_json()) == set(FEATURE_NAMES)


def test_the_counts_agree_with_the_plan() -> None:
    plans = [
        StepPlan([Chunk(seq(10, computed=12, outputs=3), 1, yields_token=True)]),
        StepPlan([Chunk(seq(10, computed=6), 4, yields_token=True), Chunk(seq(9, computed=9, outputs=1), 1, True)]),
        StepPlan([Chunk(seq(3), 3, yields_token=True, num_pad=2), Chunk(seq(1), 1, yields_token=True, num_pad=4)]),
        StepPlan([Chunk(seq(3, computed=6, outputs=4), 0, yields_token=False, num_pad=1)]),
        StepPlan([]),
    ]
    for plan in plans:
        f = step_features(plan)
        assert (f.phase, f.prefill_tokens + f.decode_seqs, f.padded_rows) == (plan.phase, plan.num_tokens, plan.num_pad)
