"""Weight and KV precision in the roofline (issue #30): bytes per element and the tensor-core peak per accelerator;
a precision the accelerator lacks is one line, exit 2, before any work."""

from __future__ import annotations

import pytest

from engines.errors import EngineInputError
from engines.sim.build import build_sim_engine
from engines.sim.hardware import HARDWARE


def test_fp8_halves_the_bytes_and_doubles_the_peak_on_an_h100() -> None:
    bf16 = build_sim_engine({"hardware": "h100"}, "x").cost
    fp8 = build_sim_engine({"hardware": "h100", "precision": "fp8", "kv_precision": "fp8"}, "x").cost
    assert fp8.weight_bytes_device == pytest.approx(bf16.weight_bytes_device / 2)
    assert fp8.kv_bytes_per_token == bf16.kv_bytes_per_token // 2
    assert fp8._prefill_rate == pytest.approx(bf16._prefill_rate * 1979.0 / 989.5)


def test_int4_is_weight_only_at_the_bf16_peak() -> None:
    bf16 = build_sim_engine({"hardware": "a100"}, "x").cost
    int4 = build_sim_engine({"hardware": "a100", "precision": "int4"}, "x").cost
    assert int4.weight_bytes_device == pytest.approx(bf16.weight_bytes_device / 4)
    assert int4._prefill_rate == bf16._prefill_rate and int4.kv_bytes_per_token == bf16.kv_bytes_per_token


def test_every_accelerator_states_which_formats_it_has() -> None:
    assert HARDWARE["a100"].fp8_tflops is None and HARDWARE["a100"].int8_tops == 624.0
    assert all(hw.int8_tops for hw in HARDWARE.values())


def test_a_precision_the_accelerator_lacks_is_one_line() -> None:
    # EngineInputError is a user error: the CLI prints it as one line and exits 2 (harness/errors.py); building
    # the engine is where `batchmark run` meets it, before any request (a CLI run here costs 18 s of imports)
    with pytest.raises(EngineInputError, match=r"^sim: a100 has no fp8 tensor cores \(it has: bf16, int8\)"):
        build_sim_engine({"hardware": "a100", "precision": "fp8"}, "x")
    with pytest.raises(EngineInputError, match="kv_precision='int4' expected one of bf16, fp8, int8"):
        build_sim_engine({"hardware": "h100", "kv_precision": "int4"}, "x")
