"""Bad input gets one clear line naming the value, never a traceback; the engine keeps serving."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engines.api import Request
from engines.inprocess import EngineOptions
from harness.cli import main
from tests.engines.helpers import mixed_requests


def test_invalid_requests_get_error_records_and_others_are_served(embedded):
    import asyncio

    from engines.api import FinishEvent, TokenEvent
    from engines.inprocess import InProcessEngine

    context = embedded.model.config.max_position_embeddings
    good = mixed_requests(4, seed=1, vocab=embedded.model.config.vocab_size, output=(3, 6))
    bad = [
        Request("too-long", [5] * (context + 1), 4),
        Request("zero-tokens", [5, 6], 0),
        Request("negative", [5, 6], -3),
        Request("empty", [], 4),
        Request("bad-id", [5, 10**6], 4),
    ]

    async def go():
        engine = InProcessEngine(embedded, EngineOptions(kind="continuous"))
        await engine.start()

        async def one(request):
            tokens, finish = 0, None
            async for event in engine.generate(request):
                tokens += isinstance(event, TokenEvent)
                finish = event if isinstance(event, FinishEvent) else finish
            return tokens, finish

        results = await asyncio.gather(*(one(r) for r in bad + good))
        await engine.stop()
        return dict(zip([r.request_id for r in bad + good], results, strict=True))

    results = asyncio.run(go())
    for request in bad:
        tokens, finish = results[request.request_id]
        assert tokens == 0 and finish.reason == "error" and finish.error_type == "invalid_request"
        assert request.request_id in finish.error_message and "\n" not in finish.error_message
    assert str(context) in results["too-long"][1].error_message
    assert "max_tokens=0" in results["zero-tokens"][1].error_message
    assert "1000000" in results["bad-id"][1].error_message
    for request in good:
        tokens, finish = results[request.request_id]
        assert finish.reason == "length" and tokens == request.max_tokens


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_unknown_model_path(capsys, tmp_path):
    err = _one_line_error(capsys, ["bench", "engines", "--model", str(tmp_path / "nope")])
    assert "nope" in err and "no such directory" in err


def test_malformed_checkpoints(capsys, tmp_path):
    no_config = tmp_path / "no-config"
    no_config.mkdir()
    assert "config.json is missing" in _one_line_error(capsys, ["bench", "engines", "--model", str(no_config)])

    bad_json = tmp_path / "bad-json"
    bad_json.mkdir()
    (bad_json / "config.json").write_text("{not json")
    assert "invalid JSON" in _one_line_error(capsys, ["bench", "engines", "--model", str(bad_json)])

    wrong_arch = tmp_path / "wrong-arch"
    wrong_arch.mkdir()
    (wrong_arch / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    assert "BertModel" in _one_line_error(capsys, ["bench", "engines", "--model", str(wrong_arch)])

    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    (no_weights / "model.safetensors").write_bytes(b"this is not a safetensors file")
    assert "cannot load weights" in _one_line_error(capsys, ["bench", "engines", "--model", str(no_weights)])


def test_bad_flags_are_one_line(capsys):
    assert "--min-output" in _one_line_error(capsys, ["bench", "engines", "--min-output", "0"])


def test_unknown_policy_names_the_choices():
    from engines.errors import EngineInputError
    from engines.policy import make_policy

    with pytest.raises(EngineInputError, match=r"'lifo'.*fcfs"):
        make_policy("lifo")


@pytest.mark.slow
def test_subprocess_shows_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "bench", "engines", "--model", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "config.json is missing" in proc.stderr
