"""Fuzzing every input batchmark reads: serve's request bodies, trace files (CSV and JSONL), workload specs,
engine specs, gate rules and run directories. Whatever the input, the answer is a 4xx naming the field (never
a 500) or one line and exit 2 naming the file or flag (never a traceback, never another exit code).

Bounded on purpose: a few dozen examples per kind, no deadline games, so `make test` stays quick; a failure
prints the shrunk input to add to the example-based tests.
"""

from __future__ import annotations

import asyncio
import json
import math
import string
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.cli import main

FUZZ = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
MODEL = "fuzz-model"


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], must_name: str) -> None:
    """Run the CLI: exit 0, or exit 2 with exactly one stderr line that names `must_name`."""
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("batchmark: error: "), err
        assert must_name in err, err


# -- values that break naive code -------------------------------------------------------------------
nasty_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", " ", "\ud800", "a\udfffb", "\x00", "é", "nan", "inf", "-1", "1e400", "[[[", "{}", '"']),
)
nasty_number = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 2**63, 10**22, 1e308, -0.0]),
)
json_leaf = st.one_of(st.none(), st.booleans(), nasty_number, nasty_text)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(nasty_text, inner, max_size=4)),
    max_leaves=12,
)


def _dumps(value: Any) -> bytes:
    # NaN/inf as the tokens Python's json writes (not valid JSON: a server must say so, not crash)
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


# -- serve's request bodies -------------------------------------------------------------------------
BODY_KEYS = [
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "ignore_eos",
    "stop_token_ids",
    "return_token_ids",
    "n",
    "best_of",
    "stop",
    "temperature",
    "logprobs",
    "echo",
    "top_p",
]


@st.composite
def request_bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["shaped", "shaped", "shaped", "any_json", "bytes", "deep"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "deep":
        depth = draw(st.integers(min_value=900, max_value=20_000))
        return b'{"model": "fuzz-model", "prompt": ' + b"[" * depth + b"1" + b"]" * depth + b"}"
    if kind == "any_json":
        return _dumps(draw(json_value))
    body: dict[str, Any] = {"model": draw(st.sampled_from([MODEL, MODEL, "other", 3, None]))}
    body["prompt" if draw(st.booleans()) else "messages"] = draw(
        st.one_of(
            nasty_text,
            st.lists(st.integers(min_value=-5, max_value=10**7), max_size=6),
            st.lists(
                st.fixed_dictionaries(
                    {
                        "role": st.sampled_from(["user", "system", "robot", 3]),
                        "content": st.one_of(nasty_text, json_value),
                    }
                ),
                max_size=3,
            ),
            json_value,
        )
    )
    for key in draw(st.lists(st.sampled_from(BODY_KEYS[3:]), max_size=5, unique=True)):
        body[key] = draw(st.one_of(st.integers(min_value=-3, max_value=6), json_value))
    return _dumps(body)


@pytest.fixture(scope="module")
def server(embedded):
    from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
    from engines.serve import make_app
    from engines.serve.background import BackgroundServer

    def app():
        engine = InProcessEngine(embedded, EngineOptions(kv=KVConfig(memory_mb=8)))
        return make_app(engine, embedded.tokenizer, MODEL, max_body_bytes=2**20, default_max_tokens=2)

    with BackgroundServer(app) as s:
        yield s.url


@FUZZ
@given(body=request_bodies(), path=st.sampled_from(["/v1/completions", "/v1/chat/completions"]))
def test_serve_never_answers_500(server, body, path):
    async def go() -> tuple[int, bytes]:
        async with aiohttp.ClientSession() as session:
            headers = {"Content-Type": "application/json"}
            async with session.post(server + path, data=body, headers=headers) as response:
                return response.status, await response.read()

    status, raw = asyncio.run(go())
    assert status in (200, 400, 404, 413, 429), (status, raw[:300])
    if status != 200:
        error = json.loads(raw)["error"]
        assert error["message"] and error["type"] == ("not_found_error" if status == 404 else error["type"])
        if status == 400:
            assert error["param"], error  # the field is named


# -- trace files ------------------------------------------------------------------------------------
csv_cell = st.one_of(
    nasty_text.map(lambda t: t.replace("\n", " ")),
    nasty_number.map(str),
    st.sampled_from(["2023-11-16 18:15:46.68", "99999999999999999999999", "", "1,2"]),
)
CSV_HEADERS = [
    "TIMESTAMP,ContextTokens,GeneratedTokens",
    "timestamp,input_length,output_length,hash_ids",
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    "t,n_in,n_out,n_in",
    "a",
]


@st.composite
def csv_files(draw: st.DrawFn) -> str:
    header = draw(st.sampled_from(CSV_HEADERS))
    width = header.count(",") + 1
    rows = draw(st.lists(st.lists(csv_cell, min_size=width - 1, max_size=width + 1), max_size=5))
    quote = draw(st.booleans())
    lines = [",".join(f'"{c}"' if quote and "," in c else c for c in row) for row in rows]
    return "\n".join([header, *lines]) + draw(st.sampled_from(["", "\n", "\r\n"]))


@st.composite
def jsonl_files(draw: st.DrawFn) -> str:
    keys = ["timestamp", "input_length", "output_length", "hash_ids"]
    rows = draw(
        st.lists(st.one_of(st.dictionaries(st.sampled_from(keys), json_value, max_size=4), json_value), max_size=5)
    )
    return "\n".join(json.dumps(r, allow_nan=True) for r in rows)


@FUZZ
@given(content=st.one_of(csv_files(), jsonl_files()))
@example(content='{"\\ud800": null}')  # a lone surrogate, quoted back in the error: written escaped, not a crash
def test_trace_files_are_read_or_refused_in_one_line(tmp_path_factory, capsys, content):
    suffix = ".jsonl" if content[:1] in '{["0123456789-ntf' and not content.startswith(tuple(CSV_HEADERS)) else ".csv"
    path = tmp_path_factory.mktemp("trace") / f"trace{suffix}"
    path.write_text(content, encoding="utf-8", errors="surrogatepass")
    one_error_line(capsys, ["workload", "describe", str(path)], str(path))


# -- workload spec files ----------------------------------------------------------------------------
def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return '""'


toml_leaf = st.one_of(
    st.booleans(),
    nasty_number.filter(lambda v: not isinstance(v, int) or abs(v) < 2**63),
    st.text(alphabet=string.ascii_letters + " -_", max_size=8),
)
toml_value = st.recursive(
    toml_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "dist",
                    "value",
                    "mean",
                    "std",
                    "median",
                    "sigma",
                    "min",
                    "max",
                    "low",
                    "high",
                    "process",
                    "cv",
                    "weight",
                    "components",
                    "trace",
                    "field",
                ]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=8,
)
LENGTH = st.one_of(
    toml_value,
    st.fixed_dictionaries(
        {"dist": st.sampled_from(["fixed", "uniform", "normal", "lognormal", "mixture", "empirical", "zipf"])},
        optional={
            "value": toml_leaf,
            "mean": toml_leaf,
            "std": toml_leaf,
            "median": toml_leaf,
            "sigma": toml_leaf,
            "low": toml_leaf,
            "high": toml_leaf,
            "max": toml_leaf,
        },
    ),
)


@st.composite
def spec_files(draw: st.DrawFn) -> str:
    top = {
        k: draw(toml_value)
        for k in draw(st.lists(st.sampled_from(["seed", "requests", "duration_s", "name"]), max_size=3, unique=True))
    }
    lines = [f"{k} = {_toml(v)}" for k, v in top.items()]
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        tenant = {"rate": draw(toml_value), "input": draw(LENGTH), "output": draw(LENGTH)}
        for key in draw(
            st.lists(
                st.sampled_from(["arrival", "priority", "start_s", "requests", "count", "colour"]),
                max_size=2,
                unique=True,
            )
        ):
            tenant[key] = draw(toml_value)
        lines.append("[[tenants]]")
        lines += [f"{k} = {_toml(v)}" for k, v in tenant.items()]
    if draw(st.booleans()):
        lines.append("[transforms]")
        keys = ["rate", "time_scale", "first", "requests", "max_context", "start_s", "duration_s", "jitter"]
        lines += [
            f"{k} = {_toml(draw(toml_value))}" for k in draw(st.lists(st.sampled_from(keys), max_size=2, unique=True))
        ]
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["[trace]", "[closed_loop]", "[[", "x = ", "[trace]\nbundled = 3"])))
    return "\n".join(lines) + "\n"


@FUZZ
@given(text=spec_files())
def test_workload_specs_are_read_or_refused_in_one_line(tmp_path_factory, capsys, text):
    path = tmp_path_factory.mktemp("spec") / "fuzz.toml"
    path.write_text(text, encoding="utf-8")
    one_error_line(capsys, ["workload", "describe", str(path)], str(path))


# -- engine specs -----------------------------------------------------------------------------------
SPEC_KEYS = [
    "label",
    "policy",
    "max_batch",
    "batch_timeout_ms",
    "max_running",
    "max_batched_tokens",
    "chunked_prefill",
    "kv_memory_mb",
    "kv_blocks",
    "block_size",
    "step_delay_ms",
    "slowdown",
    "url",
    "model",
    "api",
    "timeout_s",
    "read_timeout_s",
    "connections",
    "api_key_env",
    "colour",
]
spec_value = st.one_of(
    st.sampled_from(
        [
            "nan",
            "inf",
            "-1",
            "0",
            "1",
            "1e400",
            "true",
            "fcfs",
            "chat",
            "",
            "http://[::1",
            "http://h:99999",
            "http://127.0.0.1:9",
            "=",
            ":",
        ]
    ),
    nasty_number.map(str),
    st.text(alphabet=string.printable, max_size=6),
)


@st.composite
def engine_specs(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["static", "continuous", "zero", "http", "warp", ""]))
    pairs = [f"{draw(st.sampled_from(SPEC_KEYS))}={draw(spec_value)}" for _ in range(draw(st.integers(0, 3)))]
    return kind + (":" + ",".join(pairs) if pairs or draw(st.booleans()) else "")


@FUZZ
@given(texts=st.lists(engine_specs(), min_size=1, max_size=2))
def test_engine_specs_are_checked_before_any_work(texts):
    from harness.engine_specs import parse_engine_specs
    from harness.errors import user_errors

    try:
        specs = parse_engine_specs(texts, {})
    except user_errors() as exc:
        message = str(exc)
        assert "\n" not in message and "--engine" in message, message
    else:  # accepted: every value is one an engine can take, and the engine can be built from it
        from harness.engine_specs import build_engine

        for spec in specs:
            for key, value in spec.options.items():
                if isinstance(value, float):
                    assert math.isfinite(value) and value >= 0, (key, value)
            if spec.kind in ("http", "zero"):
                build_engine(spec, None)  # an HTTP engine checks its URL and options on construction


# -- gate rules -------------------------------------------------------------------------------------
RULE_METRICS = ["ttft.p99", "tpot.p50", "output_tok_s", "goodput_rps", "slo_attainment", "nope.p50", "e2e.p101"]


@st.composite
def gate_files(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.binary(max_size=40))  # not UTF-8, not TOML
    rules = []
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["<=", ">=", "<", "==", "~"]))
        bound = draw(st.sampled_from(["+5%", "-5%", "10 ms", "nan", "1e400", "-inf", "abc", "5", "+5"]))
        rules.append(f"{draw(st.sampled_from(RULE_METRICS))} {op} {bound}")
    lines = ["[gate]"] if draw(st.booleans()) else []
    lines.append(f"rules = {json.dumps(rules)}")
    for key in draw(
        st.lists(
            st.sampled_from(["alpha", "pairing", "unit", "min_samples", "n_boot", "colour"]), max_size=2, unique=True
        )
    ):
        lines.append(f"{key} = {_toml(draw(toml_leaf))}")
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def zero_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zero-run")
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "30",
        "--time-scale",
        "40",
        "--engine",
        "zero",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    return out


@settings(FUZZ, max_examples=15)
@given(content=gate_files())
def test_gate_rules_are_read_or_refused_in_one_line(zero_run, tmp_path_factory, capsys, content):
    path = tmp_path_factory.mktemp("gate") / "gate.toml"
    path.write_bytes(content)
    code = main(["gate", "--baseline", str(zero_run), "--candidate", str(zero_run), "--rules", str(path), "--quiet"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 1, 2, 3), (code, err)  # 1 failed, 3 cannot tell or no data
    if code == 2:
        assert err.count("\n") == 1 and str(path) in err, err


# -- run directories --------------------------------------------------------------------------------
RECORD_FIELDS = [
    "request_id",
    "engine",
    "tenant",
    "priority",
    "max_tokens",
    "ignore_eos",
    "prompt_tokens",
    "t_scheduled",
    "t_sent",
    "t_first_token",
    "t_finish",
    "token_times",
    "output_tokens",
    "engine_output_tokens",
    "finish_reason",
    "error_type",
    "preemptions",
    "trial",
    "user",
]


@st.composite
def damaged_records(draw: st.DrawFn) -> list[tuple[int, str, Any]]:
    """(record index, field, value) to overwrite; a value of ... deletes the field."""
    return draw(
        st.lists(
            st.tuples(st.integers(0, 29), st.sampled_from(RECORD_FIELDS), st.one_of(json_value, st.just(...))),
            min_size=1,
            max_size=3,
        )
    )


@settings(FUZZ, max_examples=15)
@given(damage=damaged_records(), where=st.sampled_from(["report", "gate"]))
def test_damaged_run_directories_are_refused_in_one_line(zero_run, tmp_path_factory, capsys, damage, where):
    import shutil

    run = tmp_path_factory.mktemp("damaged") / "run"
    shutil.copytree(zero_run, run)
    lines = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    for index, key, value in damage:
        if value is ...:
            lines[index].pop(key, None)
        else:
            lines[index][key] = value
    (run / "records.jsonl").write_text(
        "".join(_dumps(r).decode("utf-8", "surrogatepass") + "\n" for r in lines),
        encoding="utf-8",
        errors="surrogatepass",
    )
    (run / "metrics.json").unlink()  # the report must recompute from the damaged records
    if where == "report":
        argv = ["report", str(run), "--no-html", "--markdown", str(run / "summary.md")]
    else:
        argv = ["gate", "--baseline", str(zero_run), "--candidate", str(run), "--rule", "ttft.p99 <= +50%", "--quiet"]
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 1, 2, 3), (code, err)  # 3: the gate cannot tell (one trial a side)
    if code == 2:  # the damaged file and line, or the run directory (a damaged engine label: "holds engines ...")
        assert err.count("\n") == 1 and str(run) in err, err
