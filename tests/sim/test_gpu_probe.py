"""The GPU step probe (harness/gpu_truth/probe.py): its decoder computes a real decoder step, its rows are truth rows.

Run here on a CPU with a tiny config; the H200 rows in tests/fixtures/gpu_truth/ came from the same code on CUDA.
"""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from harness.gpu_truth.decoder import Decoder
from harness.gpu_truth.probe import add_arguments, plan, run
from harness.gpu_truth.rows import load_truth, model_shape

TINY = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 97,
    "max_position_embeddings": 4096,
}


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


def test_decode_continues_the_prefill(tiny):
    """A decode step on the prefill's cache gives the logits a prefill one token longer gives: the grouped-query
    layout, the rotary positions and the cache writes are those of one decoder."""
    torch.manual_seed(0)
    decoder = Decoder(model_shape(str(tiny)), torch.device("cpu"), torch.float32)
    ids = torch.randint(0, TINY["vocab_size"], (3, 9))
    with torch.inference_mode():
        whole = decoder.prefill(ids, decoder.kv_cache(3, 9))
        cache = decoder.kv_cache(3, 9)
        decoder.prefill(ids[:, :8], cache)
        step = decoder.decode(ids[:, 8], cache)
    assert torch.allclose(step, whole, atol=1e-4)
    assert not torch.allclose(step, decoder.prefill(ids[:, :8], decoder.kv_cache(3, 8)), atol=1e-3)


def test_plan_keeps_the_kv_budget():
    shapes = plan(kv_bytes_per_token=131072, kv_budget_gb=40.0)
    assert all(s.cache_tokens * 131072 <= 40e9 for s in shapes)
    assert {s.phase for s in shapes} == {"prefill", "decode", "mixed"}
    assert len(plan(131072, 1e6)) > len(shapes)  # a larger budget times the larger shapes too


def test_probe_rows_load_as_truth(tiny, tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = tmp_path / "truth"
    args = parser.parse_args(["--model", str(tiny), "--device", "cpu", "--repeats", "2", "--quick", "-o", str(out)])
    assert run(args) == 0
    rows = load_truth(out)
    assert {r.phase for r in rows} == {"prefill", "decode", "mixed"}
    assert all(r.ms > 0 and r.source == "batchmark-eager" and r.hardware == "cpu" for r in rows)
    mixed = next(r for r in rows if r.kind == "mixed")
    assert (mixed.tokens, mixed.context, mixed.batch, mixed.decode_context) == (256, 0, 8, 1024)
    assert json.loads((out / "batchmark-probe.json").read_text())["repeats"] == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "no-such-model"], "unknown model"),
        (["--repeats", "0"], "must be positive"),
        (["--device", "cuda"], "no CUDA GPU"),
        (["-o", "__FILE__"], "not a folder"),
    ],
)
def test_bad_probe_options_are_one_line(tmp_path, capsys, extra, message):
    from harness.cli import main

    if "--device" in extra and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    (tmp_path / "file").write_text("")
    extra = [str(tmp_path / "file") if e == "__FILE__" else e for e in extra]
    argv = ["sim", "probe", "--device", "cpu", "-o", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_a_mixed_step_is_the_chunk_and_the_decodes_it_joins(tiny):
    """The mixed step's chunk continues a cached prefix as a longer prefill would, and its decodes give what a decode
    step alone gives: one GEMM over both row sets, attention apart."""
    torch.manual_seed(1)
    decoder = Decoder(model_shape(str(tiny)), torch.device("cpu"), torch.float32)
    prompt, others = torch.randint(0, 97, (1, 11)), torch.randint(0, 97, (2, 7))
    with torch.inference_mode():
        whole = decoder.prefill(prompt, decoder.kv_cache(1, 11))
        chunk_cache, decode_cache = decoder.kv_cache(1, 11), decoder.kv_cache(2, 7)
        decoder.prefill(prompt[:, :6], chunk_cache)
        decoder.prefill(others[:, :6], decode_cache)
        mixed = decoder.mixed(prompt[0, 6:], chunk_cache, others[:, 6], decode_cache)
        decode_cache = decoder.kv_cache(2, 7)
        decoder.prefill(others[:, :6], decode_cache)
        alone = decoder.decode(others[:, 6], decode_cache)
    assert torch.allclose(mixed[0], whole[0], atol=1e-4)
    assert torch.allclose(mixed[1:], alone, atol=1e-4)
