import pytest

from harness.metrics import phase_table, steps_frame, utilisation


def _step(step, t_start, t_end, phase, running, idle, tokens, padded, kv, **extra):
    return {
        "step": step,
        "t_start": t_start,
        "t_end": t_end,
        "phase": phase,
        "num_running": running,
        "max_slots": 4,
        "idle_slots": idle,
        "tokens_computed": tokens,
        "padded_tokens": padded,
        "kv_blocks_used": kv,
        "kv_blocks_total": 100,
        **extra,
    }


@pytest.fixture
def steps():
    return steps_frame(
        [
            _step(0, 0.0, 1.0, "prefill", 2, 2, 20, 4, 10, waiting=3, blocked_reason="batch_running"),
            _step(1, 1.0, 3.0, "decode", 4, 0, 4, 0, 30, preempted=["x"]),
            _step(2, 4.0, 4.0, "decode", 1, 0, 1, 0, 0),  # after 1 s without a step: the engine waited
        ]
    )


def test_utilisation_hand_computed(steps) -> None:
    u = utilisation(steps)
    assert u["steps"] == 3
    assert u["trace_seconds"] == 4.0
    assert u["idle_time_share"] == pytest.approx(0.25)  # 1 s of 4 between steps
    # Time-weighted: (2/4 x 1 s + 4/4 x 2 s + 1/4 x 0 s) / 3 s = 2.5 / 3.
    assert u["mean_running_share"] == pytest.approx(2.5 / 3)
    assert u["idle_slot_share"] == pytest.approx((0.5 * 1) / 3)
    assert u["padded_token_share"] == pytest.approx(4 / 29)  # 4 padded of 25 real + 4 padded
    assert u["kv_use_mean"] == pytest.approx((0.1 * 1 + 0.3 * 2 + 0.0 * 0) / 3)
    assert u["kv_use_max"] == pytest.approx(0.3)
    assert u["preemptions"] == 1
    assert u["max_waiting"] == 3
    assert u["steps_by_phase"] == {"prefill": 1, "decode": 2, "mixed": 0}
    assert u["seconds_by_phase"] == {"prefill": 1.0, "decode": 2.0, "mixed": 0.0}
    assert u["steps_by_blocked_reason"] == {"batch_running": 1}


def test_phase_table_shares(steps) -> None:
    table = phase_table(steps)
    assert table.loc["decode", "time_share"] == pytest.approx(2 / 3)
    assert table.loc["prefill", "tokens_computed"] == 20


def test_untimed_trace_weights_steps_equally() -> None:
    frame = steps_frame([_step(0, 0.0, 0.0, "decode", 1, 3, 1, 0, 1), _step(1, 0.0, 0.0, "decode", 3, 1, 3, 0, 3)])
    assert utilisation(frame)["mean_running_share"] == pytest.approx(0.5)  # (1/4 + 3/4) / 2


def test_a_saturated_engine_is_never_idle() -> None:
    frame = steps_frame([_step(i, float(i), float(i + 1), "decode", 4, 0, 4, 0, 1) for i in range(3)])
    assert utilisation(frame)["idle_time_share"] == 0.0


def test_empty_trace() -> None:
    assert utilisation(steps_frame([])) == {"steps": 0}
