"""`batchmark serve` / `batchmark probe` argument errors, the HTTP engine's option checks, and the
probe's decision rule on synthetic timelines."""

from __future__ import annotations

import socket

import pytest

from engines.api import FinishEvent
from engines.errors import EngineInputError
from engines.http import HttpEngine
from harness.cli import main
from harness.probe import ProbeConfig, Timeline, decide, measure_round, models_url

STEP = 0.005


def _line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("batchmark: error:")
    return err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["serve", "--port", "70000"], "--port"),
        (["serve", "--max-batch", "0"], "--max-batch"),
        (["serve", "--max-waiting", "0"], "--max-waiting"),
        (["serve", "--policy", "nope"], "--policy"),
        (["serve", "--api-key", " "], "--api-key"),
        (["serve", "--replica-id", " "], "--replica-id"),
        (["serve", "--replica-id", "a\nb"], "--replica-id"),
        (["serve", "--api-key-env", "BATCHMARK_NO_SUCH_VAR"], "--api-key-env"),
        (["probe", "http://127.0.0.1:9", "--long-tokens", "5"], "--long-tokens"),
        (["probe", "http://127.0.0.1:9", "--rounds", "0"], "--rounds"),
        (["probe", "http://127.0.0.1:9", "--api-key-env", "BATCHMARK_NO_SUCH_VAR"], "--api-key-env"),
    ],
)
def test_bad_arguments_are_one_line_exit_2(capsys, argv, needle):
    assert needle in _line_error(capsys, argv)


def test_probe_unreachable_server_is_one_line(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert "cannot list models" in _line_error(capsys, ["probe", f"http://127.0.0.1:{port}", "--timeout", "2"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"url": "ftp://x"},
        {"url": "localhost:8000"},
        {"api": "embeddings"},
        {"timeout_s": 0},
        {"connections": 0},
        {"read_bufsize": 65536},
        {"model": ""},
        {"prompt_format": "bytes"},
    ],
)
def test_http_engine_rejects_bad_options(kwargs):
    args = {"url": "http://127.0.0.1:8000", "model": "m", **kwargs}
    url, model = args.pop("url"), args.pop("model")
    with pytest.raises(EngineInputError):
        HttpEngine(url, model, **args)


def test_models_url():
    assert models_url("http://h:1") == "http://h:1/v1/models"
    assert models_url("http://h:1/v1/") == "http://h:1/v1/models"
    assert models_url("http://h:1/v1/chat/completions") == "http://h:1/v1/models"


# -- the decision rule ------------------------------------------------------------------------------
CONFIG = ProbeConfig(
    url="http://x", model="m", long_requests=2, long_tokens=40, short_requests=3, short_tokens=4, warmup_tokens=5
)


def _finish(n: int) -> FinishEvent:
    return FinishEvent("r", "length", 3, n, 0.0)


def synthetic_round(short_start_steps: float, jitter: float = 0.0, seed: int = 0) -> tuple:
    """Long requests step every STEP from t=0; short ones are sent after the warm-up and get their first
    token `short_start_steps` steps later (static: after the long batch; continuous: ~2 steps)."""
    import random

    rng = random.Random(seed)
    longs = [
        Timeline(0.0, [STEP * (k + 1) for k in range(CONFIG.long_tokens)], _finish(CONFIG.long_tokens))
        for _ in range(CONFIG.long_requests)
    ]
    t_short = STEP * CONFIG.warmup_tokens + STEP / 3
    shorts = []
    for _ in range(CONFIG.short_requests):
        first = t_short + STEP * short_start_steps * (1 + rng.uniform(-jitter, jitter))
        shorts.append(
            Timeline(t_short, [first + STEP * k for k in range(CONFIG.short_tokens)], _finish(CONFIG.short_tokens))
        )
    return longs, shorts, t_short


def test_probe_decides_continuous_and_static():
    remaining_steps = CONFIG.long_tokens - CONFIG.warmup_tokens
    continuous = [measure_round(*synthetic_round(1.5, 0.2, s), CONFIG) for s in range(3)]
    static = [measure_round(*synthetic_round(remaining_steps + 1, 0.02, s), CONFIG) for s in range(3)]
    c, s = decide(CONFIG, "m", continuous), decide(CONFIG, "m", static)
    assert (c.verdict, s.verdict) == ("continuous", "static")
    assert c.confidence > 0.99 and s.confidence > 0.99
    assert c.median_z_ttft < 0.1 and abs(s.median_z_ttft - 1) < 0.1


def test_probe_is_inconclusive_halfway_or_on_failures():
    halfway = (CONFIG.long_tokens - CONFIG.warmup_tokens) / 2
    scattered = [measure_round(*synthetic_round(halfway, 0.9, s), CONFIG) for s in range(3)]
    assert decide(CONFIG, "m", scattered).verdict == "inconclusive"
    longs, shorts, t_short = synthetic_round(1.5)
    shorts[0].finish = FinishEvent("r", "error", 3, 0, 0.0, error_type="http_status", error_message="HTTP 500")
    failed = [measure_round(longs, shorts, t_short, CONFIG)] * 3
    result = decide(CONFIG, "m", failed)
    assert result.verdict == "inconclusive" and "failed" in result.reason


def test_probe_needs_room_between_the_predictions():
    longs, shorts, t_short = synthetic_round(1.5)
    for t in longs:  # the long requests end right after the short ones are sent
        t.tokens = [x for x in t.tokens if x <= t_short + STEP]
    result = decide(CONFIG, "m", [measure_round(longs, shorts, t_short, CONFIG)] * 3)
    assert result.verdict == "inconclusive" and "long-tokens" in result.reason


def serial_round() -> tuple:
    """One stream at a time: the second long request waits for the first, each short for the one before."""
    t = 0.0
    longs = []
    for _ in range(CONFIG.long_requests):
        tokens = [t + STEP * (k + 2) for k in range(CONFIG.long_tokens)]  # a prefill step, then one per token
        longs.append(Timeline(0.0, tokens, _finish(CONFIG.long_tokens)))
        t = tokens[-1]
    t_short = longs[-1].tokens[CONFIG.warmup_tokens] + STEP / 3
    shorts = []
    for _ in range(CONFIG.short_requests):
        tokens = [t + STEP * (k + 2) for k in range(CONFIG.short_tokens)]
        shorts.append(Timeline(t_short, tokens, _finish(CONFIG.short_tokens)))
        t = tokens[-1]
    return longs, shorts, t_short


def test_probe_decides_serial():
    # before: a serial server (vLLM --max-num-seqs 1) was called "static" with confidence 1.0
    result = decide(CONFIG, "m", [measure_round(*serial_round(), CONFIG) for _ in range(3)])
    assert result.verdict == "serial" and result.confidence == 1.0, result.reason
    assert "first tokens came 25.0 ms apart" in result.reason  # a prefill step and 4 tokens, 5 ms each
    remaining_steps = CONFIG.long_tokens - CONFIG.warmup_tokens
    static = [measure_round(*synthetic_round(remaining_steps + 1, 0.02, s), CONFIG) for s in range(3)]
    continuous = [measure_round(*synthetic_round(1.5, 0.2, s), CONFIG) for s in range(3)]
    assert decide(CONFIG, "m", static).verdict == "static"  # batches overlap: never serial
    assert decide(CONFIG, "m", continuous).verdict == "continuous"


def test_the_read_timeout_is_an_http_option_and_a_flag():
    # before: no flag set the HTTP engine's read (stall) timeout
    from harness.cli import args as shared
    from harness.cli import build_parser
    from harness.engine_specs import build_engine, parse_engine_specs

    spec = parse_engine_specs(["http:url=http://127.0.0.1:9,read_timeout_s=0.5"], {})[0]
    assert build_engine(spec, None).config.read_timeout_s == 0.5
    flags = ["run", "--engine", "http", "--url", "http://127.0.0.1:9", "--read-timeout-s", "2"]
    args = build_parser().parse_args(flags)
    assert build_engine(shared.engine_specs(args)[0], None).config.read_timeout_s == 2.0
    with pytest.raises(EngineInputError, match="read_timeout_s='0' must be > 0"):
        parse_engine_specs(["http:url=http://127.0.0.1:9,read_timeout_s=0"], {})
