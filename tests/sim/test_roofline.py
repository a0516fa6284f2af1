"""The roofline cost model: the documented formula, KV capacity from memory, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.errors import EngineInputError
from engines.sim.hardware import HARDWARE, accelerator
from engines.sim.roofline import RooflineCost, RooflineParams
from engines.sim.shape import known_models, load_shape
from engines.step_features import StepFeatures

GB = 1e9


def cost(model: str = "llama-3.1-8b", hw: str = "h100", tp: int = 1, **params) -> RooflineCost:
    return RooflineCost(load_shape(model), accelerator(hw), tp, RooflineParams(**params))


def test_shipped_configs_have_the_published_sizes() -> None:
    assert set(known_models()) == {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-32b", "mistral-7b"}
    params = {m: load_shape(m).params / 1e9 for m in known_models()}
    assert params["llama-3.1-8b"] == pytest.approx(8.03, abs=0.01)
    assert params["llama-3.1-70b"] == pytest.approx(70.55, abs=0.01)
    assert params["mistral-7b"] == pytest.approx(7.25, abs=0.01)
    assert load_shape("llama-3.1-8b").kv_bytes_per_token() == 128 * 1024  # 32 layers x 8 KV heads x 128 x 2 x bf16


def test_a_small_decode_step_is_the_weights_over_bandwidth() -> None:
    c = cost(overhead_ms=0.0)
    t = c.step_time(StepFeatures(decode_seqs=1, attended_context=1001, kv_read_tokens=1000, sampled_rows=1))
    weights = load_shape("llama-3.1-8b").params * 2
    expected = (weights + 128 * 1024 * 1001) / (0.8 * 3.35e12)
    assert t == pytest.approx(expected, rel=1e-9)


def test_a_long_prefill_is_compute_bound_at_the_prefill_mfu() -> None:
    c = cost(overhead_ms=0.0)
    n = 4096
    shape = load_shape("llama-3.1-8b")
    flops = 2 * shape.layers * shape.layer_params * n + 2 * shape.lm_head_params
    flops += 4 * shape.layers * shape.heads * shape.head_dim * n * (n + 1) // 2
    t = c.step_time(StepFeatures(prefill_tokens=n, prefill_chunks=1, attended_context=n * (n + 1) // 2, sampled_rows=1))
    assert t == pytest.approx(flops / (0.45 * 989.5e12), rel=1e-9)


def test_tensor_parallel_splits_the_work_and_pays_all_reduce() -> None:
    step = StepFeatures(decode_seqs=32, attended_context=32 * 2000, kv_read_tokens=32 * 2000, sampled_rows=32)
    one, four = cost("llama-3.1-8b", tp=1), cost("llama-3.1-8b", tp=4)
    assert four.step_time(step) < one.step_time(step)
    four_free = cost("llama-3.1-8b", tp=4, allreduce_latency_us=0.0)
    assert four.step_time(step) - four_free.step_time(step) == pytest.approx(2 * 32 * 8e-6, rel=0.05)


def test_kv_capacity_is_memory_left_after_weights_and_activations() -> None:
    c = cost(activation_gb=2.0)
    weights = load_shape("llama-3.1-8b").params * 2
    assert c.kv_capacity_bytes(512, 32) == int(80 * GB * 0.9 - weights - 2 * GB)
    assert cost("llama-3.1-70b", tp=4).kv_capacity_bytes(512, 32) > 4 * cost().kv_capacity_bytes(512, 32) / 2


def test_a_model_that_does_not_fit_says_so() -> None:
    with pytest.raises(EngineInputError, match=r"llama-3.1-70b does not fit on 1 x h100.*raise tp"):
        cost("llama-3.1-70b").kv_capacity_bytes(512, 32)


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(EngineInputError, match=r"unknown hardware 'b200'.*h100, h200, a100, l40s, mi300x"):
        accelerator("b200")
    with pytest.raises(EngineInputError, match=r"unknown model 'gpt-5'.*llama-3.1-8b"):
        load_shape("gpt-5")
    assert set(HARDWARE) == {"h100", "h200", "a100", "l40s", "mi300x"}
    assert all(hw.source.startswith("NVIDIA") or hw.source.startswith("AMD") for hw in HARDWARE.values())


def test_a_config_missing_a_field_names_file_and_field(tmp_path: Path) -> None:
    config = json.loads(Path(load_shape("llama-3.1-8b").source).read_text())
    del config["intermediate_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(EngineInputError, match=r"config.json: field 'intermediate_size' missing"):
        load_shape(str(path))
    with pytest.raises(EngineInputError, match="tp=3 must divide"):
        cost(tp=3)
    with pytest.raises(EngineInputError, match=r"mbu=1\.5"):
        cost(mbu=1.5)


# the plain roofline, and every term a calibration sets (overlap < 1 was once left out of the decode runs)
CALIBRATED = RooflineParams(overlap=0.7, prefill_rows_half=20.0, attention_mfu=0.3, activation_bytes=2e5)


@pytest.mark.parametrize("params", [RooflineParams(), CALIBRATED], ids=["plain", "calibrated"])
@pytest.mark.parametrize(("model", "tp"), [("llama-3.1-8b", 1), ("llama-3.1-70b", 4)])
def test_decode_step_times_on_arrays_are_step_time_to_the_bit(model: str, tp: int, params: RooflineParams) -> None:
    """Decode runs (engines/sim/decode_run.py) price their steps on arrays: each must be the float `step_time` gives."""
    import numpy as np

    cost = RooflineCost(load_shape(model), accelerator("h100"), tp, params)
    for n in (1, 3, 32):
        kv_read = np.array([0, 1, 17, 4096, 123_457, 2_000_003], dtype=np.int64)
        times = cost.decode_step_times(n, kv_read).tolist()
        assert times == [cost.step_time(StepFeatures(0, 0, n, 0, 0, k + n, k, n)) for k in kv_read.tolist()]
