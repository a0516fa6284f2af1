"""Prompts exact in the target's tokenizer: ids without special tokens, text that re-tokenizes to the asked
length, chat text whose templated prompt has it; and HTTP runs (chat included) that work end to end."""

from __future__ import annotations

import dataclasses
import json

import pytest

from engines.model.loader import load_tokenizer
from engines.serve.chat import chat_prompt_ids
from harness.prompts import build_prompts
from workloads import load_workload


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def test_each_kind_is_exact_in_the_tokenizer(tokenizer):
    workload = load_workload("chat-mix", requests=40)
    tok = tokenizer.tokenizer
    prompts = build_prompts(workload, {"ids", "text", "chat"}, tok, tokenizer.describe(), seed=3)
    assert not any(prompts.mismatches.values()), prompts.mismatches
    special = set(tok.all_special_ids)
    for request, text, chat in zip(*(prompts.schedules[k] for k in ("ids", "text", "chat")), strict=True):
        n = next(r.input_tokens for r in workload.requests if r.request_id == request.request.request_id)
        assert len(request.request.prompt_token_ids) == n
        assert not special & set(request.request.prompt_token_ids)  # no BOS/EOS in the middle of a prompt
        assert (
            tok(text.request.prompt_text, add_special_tokens=False)["input_ids"] == list(text.request.prompt_token_ids)
            and len(text.request.prompt_token_ids) == n
        )
        templated = chat_prompt_ids(tok, [{"role": "user", "content": chat.request.prompt_text}])
        assert len(templated) == n == len(chat.request.prompt_token_ids)  # the template's tokens are counted
    assert prompts.describe()["tokenizer"]["sha256"] == tokenizer.sha256


def test_a_prompt_shorter_than_the_chat_template_is_reported(tokenizer):
    workload = load_workload("chat-small", requests=5)
    first = dataclasses.replace(workload.requests[0], input_tokens=3)  # cannot hold the 14-token fallback template
    tiny = dataclasses.replace(workload, requests=[first, *workload.requests[1:]])
    prompts = build_prompts(tiny, {"chat"}, tokenizer.tokenizer, tokenizer.describe(), seed=0)
    assert len(prompts.mismatches["chat"]) == 1 and "asked for 3 tokens" in prompts.mismatches["chat"][0]
    assert "could not be made exactly as long as asked" in prompts.notes()[0]


# chat-small's prompts with 4..16-token outputs (chat-small: 8..128): what is checked is the prompts' lengths
SHORT_CHAT = """seed = 0
requests = 8

[[tenants]]
name = "chat"
rate = 2.0
arrival = { process = "poisson" }
input = { dist = "normal", mean = 64, std = 8, min = 16 }
output = { dist = "uniform", low = 4, high = 16 }
"""


@pytest.fixture(scope="module")
def short_chat(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("workload") / "short-chat.toml"
    path.write_text(SHORT_CHAT)
    return str(path)


@pytest.fixture(scope="module")
def served(embedded):
    from engines.inprocess import EngineOptions, InProcessEngine
    from engines.serve import make_app
    from engines.serve.background import BackgroundServer

    def app():
        return make_app(InProcessEngine(embedded, EngineOptions()), embedded.tokenizer, "batchmark")

    with BackgroundServer(app) as server:
        yield server.url


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_http_runs_work_from_the_cli_and_cross_check_prompt_lengths(served, short_chat, tmp_path, api, capsys):
    # before: http:api=chat sent no text, every request failed invalid_request, and the run exited 0
    from harness.cli import main

    argv = [
        "run",
        "--workload",
        short_chat,
        "--requests",
        "8",
        "--time-scale",
        "8",
        "--engine",
        f"http:url={served},api={api}",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    summary = metrics["engines"]["http"]
    assert summary["requests"]["succeeded"] == 8
    # the server's usage.prompt_tokens, request by request, against the intended length: none off by > 1
    assert summary["validity"]["prompt_tokens"] == {"checked": 8, "off": 0, "share_off": 0.0, "tolerance": 1}
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(manifest["prompts"]["tokenizer"]["sha256"]) == 64
    assert manifest["prompts"]["kinds"] == ["chat" if api == "chat" else "text"]


def test_a_run_in_which_every_request_failed_exits_1(tmp_path, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))
    from faulty_server import make_faulty_app

    from engines.serve.background import BackgroundServer
    from harness.cli import main

    with BackgroundServer(make_faulty_app) as server:  # it has no chat route: every chat request gets a 404
        argv = [
            "run",
            "--workload",
            "chat-small",
            "--requests",
            "4",
            "--time-scale",
            "20",
            "--engine",
            f"http:url={server.url},api=chat",
            "--out",
            str(tmp_path),
            "--no-report",
            "--no-progress",
        ]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "every request to engine http (trial 0) failed (4 of 4, mostly http_status" in err


def _other_tokenizer(directory):
    """A byte-level BPE unlike the embedded one (a 600-token vocabulary from a few English sentences)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<s>", "</s>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = ["the quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun"] * 50
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    directory.mkdir()
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


def test_a_tokenizer_unlike_the_servers_shows_in_the_validity_figure(served, short_chat, tmp_path, capsys):
    from harness.cli import main

    other = _other_tokenizer(tmp_path / "other-tokenizer")
    out = tmp_path / "run"
    argv = [
        "run",
        "--workload",
        short_chat,
        "--requests",
        "6",
        "--time-scale",
        "8",
        "--engine",
        f"http:url={served},api=chat",
        "--tokenizer",
        str(other),
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    summary = json.loads((out / "metrics.json").read_text())["engines"]["http"]
    figure = summary["validity"]["prompt_tokens"]
    assert figure["checked"] == 6 and figure["share_off"] > 0.5  # the server counts its own tokens
    assert "prompt_token_count" in {f["name"] for f in summary["validity"]["flags"]}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["prompts"]["tokenizer"]["source"] == str(other)
    assert "run validity" in capsys.readouterr().out
