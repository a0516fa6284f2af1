"""`batchmark import`: each tool's result file (fixtures written from each tool's documented schema, and
files the tools themselves wrote against `batchmark serve` in the versioned folders; see their READMEs)
becomes a run directory whose numbers reproduce the tool's own, under batchmark's names,
with the definitions that differ said."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.importers import import_file, read
from harness.importers.common import spread_evenly, spread_over_chunks
from harness.metrics import load_records

FIXTURES = Path(__file__).parent / "fixtures"


def metrics_of(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_tokens_of_a_chunk_share_its_time() -> None:
    assert spread_over_chunks([1.0, 2.0, 3.0], 3) == [1.0, 2.0, 3.0]
    assert spread_over_chunks([1.0, 2.0, 3.0], 6) == [1.0, 2.0, 2.0, 2.0, 3.0, 3.0]  # 5 tokens over 2 chunks
    assert spread_over_chunks([1.0, 2.0, 3.0], 2) == [1.0, 3.0]  # an empty chunk: the last token keeps the end
    assert spread_over_chunks([1.0], 3) == [1.0, 1.0, 1.0] and spread_over_chunks([], 3) == []
    assert spread_evenly(1.0, 2.0, 3, 3) == [1.0, 1.5, 2.0]


def test_vllm_detailed_result_rebuilds_every_request(tmp_path: Path) -> None:
    source = json.loads((FIXTURES / "vllm-bench-serve-detailed.json").read_text())
    run = import_file(FIXTURES / "vllm-bench-serve-detailed.json", tmp_path / "vllm")
    records = load_records(run / "records.jsonl")
    assert len(records) == 24 and set(records["engine"]) == {"vllm-bench"}
    failed = records[records["error_type"].notna()]
    assert failed["error_message"].tolist() == ["ClientPayloadError: Response payload is not completed"]
    ok = records[records["error_type"].isna()]
    assert (ok["output_tokens"].to_numpy() == np.array(source["output_lens"])[ok.index]).all()
    # the arrival is the send minus the wait for the client's concurrency slot (queue_times)
    lag = (records["t_sent"] - records["t_scheduled"]).to_numpy()
    assert lag == pytest.approx(np.array(source["queue_times"]), abs=1e-9)
    imported = metrics_of(run)["imported"]["vllm-bench"]
    checks = {c["metric"]: c for c in imported["checks"]}
    assert all(checks[m]["agrees"] for m in ("ttft_sent", "tpot", "e2e_sent"))  # the mapping reproduces vLLM
    assert not checks["itl"]["agrees"]  # 6 requests had two-token chunks: per-token gaps include zeros
    assert "a chunk may carry several tokens" in checks["itl"]["message"]  # vLLM's ITL is per chunk
    summary = metrics_of(run)["engines"]["vllm-bench"]
    assert summary["latency"]["ttft_sent"]["mean"] == pytest.approx(source["mean_ttft_ms"] / 1e3, rel=1e-9)
    assert imported["reported"]["request_rate"]["mean"] == pytest.approx(source["request_throughput"])
    assert json.loads((run / "manifest.json").read_text())["imported"]["tool"] == "vllm-bench-serve"


def test_vllm_result_without_save_detailed_is_aggregates_only(tmp_path: Path) -> None:
    run = import_file(FIXTURES / "vllm-bench-serve.json", tmp_path / "agg")
    block = metrics_of(run)["imported"]["vllm-bench"]
    assert block["per_request"] is False and any("--save-detailed" in note for note in block["notes"])
    summary = metrics_of(run)["engines"]["vllm-bench"]
    assert summary["aggregates_only"] and summary["latency"]["ttft_sent"]["percentiles"]["p99"]["ci_low"] is None
    assert summary["throughput"]["steady"]["output_token_rate"] is None and summary["throughput"]["steady"]["reason"]
    assert (run / "records.jsonl").read_text() == ""


def test_guidellm_report_maps_its_tpot_and_itl(tmp_path: Path) -> None:
    source = json.loads((FIXTURES / "guidellm-benchmarks.json").read_text())["benchmarks"][0]
    run = import_file(FIXTURES / "guidellm-benchmarks.json", tmp_path / "g")
    records = load_records(run / "records.jsonl")
    assert set(records["engine"]) == {"guidellm-constant-4"} and len(records) == 24
    assert records.set_index("request_id").loc["req-019", "finish_reason"] == "abort"  # incomplete: cancelled
    assert records.set_index("request_id").loc["req-011", "error_message"].startswith("HTTPStatusError: 500")
    # targeted_start is GuideLLM's intended send: batchmark's scheduled arrival
    first = min(r["info"]["timings"]["targeted_start"] for r in source["requests"]["successful"])
    one = source["requests"]["successful"][3]
    row = records.set_index("request_id").loc[one["request_id"]]
    assert row["t_scheduled"] == pytest.approx(one["info"]["timings"]["targeted_start"] - first, abs=1e-6)
    reported = metrics_of(run)["imported"]["guidellm-constant-4"]["reported"]
    # GuideLLM's ITL is batchmark's TPOT; its TPOT includes the first token's wait, so it is larger
    assert reported["tpot"]["theirs"] == "inter_token_latency_ms"
    assert (
        reported["guidellm_tpot"]["theirs"] == "time_per_output_token_ms"
        and "includes" in reported["guidellm_tpot"]["note"]
    )
    assert reported["guidellm_tpot"]["mean"] > reported["tpot"]["mean"]
    checks = {c["metric"]: c for c in metrics_of(run)["imported"]["guidellm-constant-4"]["checks"]}
    assert checks["ttft_sent"]["agrees"] and checks["tpot"]["agrees"] and checks["e2e_sent"]["agrees"]


def test_aiperf_jsonl_skips_warmup_and_reads_its_aggregates(tmp_path: Path) -> None:
    run = import_file(FIXTURES / "profile_export.jsonl", tmp_path / "a")
    records = load_records(run / "records.jsonl")
    assert len(records) == 24 and "warm-0" not in set(records["request_id"])  # the warm-up record is left out
    assert records.set_index("request_id").loc["a0005", "error_message"] == "ServerError: Internal Server Error"
    block = metrics_of(run)["imported"]["aiperf"]
    assert block["reported"]["tpot"]["theirs"] == "inter_token_latency"  # AIPerf's ITL is batchmark's TPOT
    assert block["reported"]["itl"]["theirs"] == "inter_chunk_latency"
    checks = {c["metric"]: c for c in block["checks"]}
    assert checks["tpot"]["agrees"] and checks["ttft_sent"]["agrees"] and checks["e2e_sent"]["agrees"]
    aggregate = read(FIXTURES / "profile_export_aiperf.json")
    assert aggregate.tool == "aiperf" and aggregate.runs[0].records is None
    assert aggregate.runs[0].reported["ttft_sent"].percentiles["p99"] == pytest.approx(
        json.loads((FIXTURES / "profile_export_aiperf.json").read_text())["time_to_first_token"]["p99"] / 1e3
    )


def test_the_report_shows_an_imported_run_beside_a_batchmark_run(tmp_path: Path, capsys) -> None:
    ours = tmp_path / "ours"
    assert (
        main(
            [
                "run",
                "--workload",
                "chat-small",
                "--requests",
                "24",
                "--rate",
                "8",
                "--engine",
                "zero",
                "--no-report",
                "--no-progress",
                "--out",
                str(ours),
            ]
        )
        == 0
    )
    assert main(["import", str(FIXTURES / "vllm-bench-serve-detailed.json"), "--out", str(tmp_path / "vllm")]) == 0
    assert main(["import", str(FIXTURES / "vllm-bench-serve.json"), "--out", str(tmp_path / "agg")]) == 0
    capsys.readouterr()
    html = tmp_path / "side.html"
    assert main(["report", str(ours), str(tmp_path / "vllm"), str(tmp_path / "agg"), "-o", str(html)]) == 0
    text = html.read_text()
    for label in ("ours/zero", "vllm/vllm-bench", "agg/vllm-bench"):
        assert label in text
    assert "imported from vllm-bench-serve" in text
    assert main(["compare", str(ours), str(tmp_path / "vllm")]) == 0
    table = capsys.readouterr().out
    head = next(line for line in table.splitlines() if line.startswith("| headline"))
    assert "ours/zero" in head and "vllm/vllm-bench" in head
    ttft = next(line for line in table.splitlines() if line.startswith("| TTFT p99"))
    assert all(c.strip() not in ("", "n/a") for c in ttft.split("|")[2:4])  # a value for both
    assert ttft.count("unresolved") == 2  # p99 of some 24 requests a side: the extreme, no interval (#31)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "v.json",
            {
                "ttfts": [0.1, 0.2],
                "itls": [[]],
                "start_times": [1, 2],
                "latencies": [0.2, 0.3],
                "input_lens": [3, 4],
                "output_lens": [1, 1],
            },
            "field itls: expected a list of 2 entries",
        ),
        (
            "v2.json",
            {
                "ttfts": [0.1],
                "itls": [[0.01, "x"]],
                "start_times": [1],
                "latencies": [0.2],
                "input_lens": [3],
                "output_lens": [3],
            },
            'field itls[0][1]: expected a number, got "x"',
        ),
        ("g.json", {"benchmarks": []}, "field benchmarks: the report holds no benchmark"),
        ("x.json", {"hello": 1}, "top level: not a known tool's result"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_field(tmp_path: Path, capsys, name, content, message) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    assert main(["import", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"batchmark: error: {path}: {message}"), err
    assert len(err.splitlines()) == 1


def test_a_bad_aiperf_line_names_its_line(tmp_path: Path, capsys) -> None:
    lines = (FIXTURES / "profile_export.jsonl").read_text().splitlines()
    broken = json.loads(lines[3])
    broken["metrics"]["time_to_first_token"]["unit"] = "fortnights"
    path = tmp_path / "profile_export.jsonl"
    path.write_text("\n".join([*lines[:3], json.dumps(broken), *lines[4:]]) + "\n")
    assert main(["import", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "line 4: field metrics.time_to_first_token.unit: expected 'ns', 'us', 'ms', 's' or 'sec'" in err


def test_the_docs_dictionary_names_every_mapping() -> None:
    from harness.importers import aiperf, guidellm, llmd, vllm

    docs = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    section = docs[docs.index("## Results from other tools") : docs.index("## Percentiles and confidence")]
    tools = (vllm, guidellm, aiperf, llmd)
    names = [m.theirs for tool in tools for m in tool.DISTRIBUTIONS]
    names += [theirs for tool in tools for _, theirs, _, _ in tool.RATES]
    missing = [n for n in names if f"`{n}" not in section]
    assert not missing, f"docs/metrics.md lacks {missing}"


def _mutated(fixture: str, change) -> bytes:
    """The fixture with one value changed (`change` edits the parsed document, or the JSONL's lines, in place)."""
    text = (FIXTURES / fixture).read_text()
    if fixture.endswith(".jsonl"):
        lines = [json.loads(line) for line in text.splitlines()]
        change(lines)
        return "\n".join(json.dumps(line) for line in lines).encode()
    data = json.loads(text)
    change(data)
    return json.dumps(data).encode()  # NaN stays NaN, as Python's json writes it


def _set(*keys, value):
    def change(node) -> None:
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


VLLM, GUIDELLM, AIPERF, AIPERF_JSON, BR = (
    "vllm-bench-serve-detailed.json",
    "guidellm-benchmarks.json",
    "profile_export.jsonl",
    "profile_export_aiperf.json",
    "llm-d-br-v0.2.json",  # `batchmark export --format llm-d-br` of the concurrency-16 import
)
BR_AGG = ("results", "request_performance", "aggregate")
G_REQ = ("benchmarks", 0, "requests", "successful", 0)
# fmt: off
BAD = [
    (VLLM, _set("ttfts", value=5), "field ttfts: expected a list"),
    (VLLM, _set("mean_ttft_ms", value="abc"), 'field mean_ttft_ms: expected a number, got "abc"'),
    (VLLM, _set("mean_ttft_ms", value=float("nan")), "field mean_ttft_ms: expected a finite number"),
    (VLLM, _set("p99_ttft_ms", value=True), "field p99_ttft_ms: expected a number, got true"),
    (VLLM, _set("output_lens", 0, value=10**12), "field output_lens[0]: expected less than or equal to"),
    (VLLM, _set("output_lens", 0, value=-5), "field output_lens[0]: expected greater than or equal to 0"),
    (VLLM, _set("output_lens", 0, value=3.5), "field output_lens[0]: expected an integer"),
    (VLLM, _set("output_lens", 0, value=True), "field output_lens[0]: expected an integer"),
    (VLLM, _set("latencies", 1, value=-0.5), "field latencies[1]: expected greater than or equal to 0"),
    (VLLM, _set("request_rate", value="fast"), "field request_rate: expected a number or 'inf'"),
    (GUIDELLM, _set("benchmarks", 0, "config", value="x"), "field benchmarks[0].config: expected a dictionary"),
    (GUIDELLM, _set("benchmarks", 0, "metrics", "time_to_first_token_ms", "successful", "mean", value="abc"),
     "field benchmarks[0].metrics.time_to_first_token_ms.successful.mean"),
    (GUIDELLM, _set("benchmarks", 0, "metrics", "request_latency", "successful", "percentiles", "p99", value=True),
     "field benchmarks[0].metrics.request_latency.successful.percentiles.p99: expected a number"),
    (GUIDELLM, _set(*G_REQ, "output_tokens", value=10**12), "requests.successful[0].output_tokens: expected less"),
    (GUIDELLM, _set(*G_REQ, "output_tokens", value=-5), "requests.successful[0].output_tokens: expected greater"),
    (GUIDELLM, _set(*G_REQ, "prompt_tokens", value=54.5), "requests.successful[0].prompt_tokens: expected an integer"),
    (GUIDELLM, _set(*G_REQ, "info", "timings", "request_start", value=float("nan")),
     "requests.successful[0].info.timings.request_start: expected a finite number"),
    (AIPERF, _set(1, "metadata", value=3), "line 2: field metadata: expected a dictionary"),
    (AIPERF, _set(1, "metadata", "request_start_ns", value=1.5), "line 2: field metadata.request_start_ns"),
    (AIPERF, _set(1, "metrics", "time_to_first_token", "value", value=float("nan")),
     "line 2: field metrics.time_to_first_token.value: expected a finite number"),
    (AIPERF, _set(1, "metrics", "time_to_first_token", "value", value=True), "time_to_first_token.value: expected a"),
    (AIPERF, _set(1, "metrics", "time_to_first_token", "unit", value="fortnights"), "time_to_first_token.unit"),
    (AIPERF, _set(1, "metrics", "output_token_count", "value", value=10**12), "field metrics.output_token_count"),
    (AIPERF, _set(1, "metrics", "inter_chunk_latency", "value", 0, value=-1), "inter_chunk_latency.value[0]"),
    (AIPERF, _set(1, "metrics", "usage_completion_tokens", value={"value": 2.5, "unit": "tokens"}),
     "line 2: field metrics.usage_completion_tokens.value: expected an integer"),
    (AIPERF_JSON, _set("time_to_first_token", "p99", value=True), "field time_to_first_token.p99: expected a number"),
    (AIPERF_JSON, _set("time_to_first_token", "unit", value="parsecs"), "field time_to_first_token.unit: expected"),
    (AIPERF_JSON, _set("request_latency", "avg", value="abc"), 'request_latency.avg: expected a number, got "abc"'),
    (BR, _set(*BR_AGG, "latency", "time_to_first_token", "units", value="fortnights"),
     "field results.request_performance.aggregate.latency.time_to_first_token.units: expected 'ms' or 's'"),
    (BR, _set(*BR_AGG, "latency", "request_latency", "mean", value=float("nan")), "request_latency.mean: expected a"),
    (BR, _set(*BR_AGG, "latency", "inter_token_latency", "p99", value=True), "inter_token_latency.p99: expected a"),
    (BR, _set(*BR_AGG, "requests", "total", value=-5), "aggregate.requests.total: expected greater than or equal"),
    (BR, _set(*BR_AGG, "throughput", value=3), "aggregate.throughput: expected a dictionary, got 3"),
    # the audit's own cases (docs/measurements/2026-12-06-issue-32-audit.md): times past any run's span were a
    # ValueError or an 8.6 TiB allocation in the warning timeline, or passed
    (VLLM, _set("start_times", 1, value=1e300), "field start_times[1]: 1e+300 s after the first request"),
    (VLLM, _set("latencies", 0, value=1e12), "field latencies[0]: 1e+12 s after the first request"),
    (GUIDELLM, _set(*G_REQ, "info", "timings", "request_start", value=1e300), "timings.request_start: 1e+300 s"),
    (GUIDELLM, _set(*G_REQ, "info", "timings", "request_end", value=1e300), "timings.request_end: 1e+300 s"),
    (AIPERF, _set(1, "metadata", "request_start_ns", value=2**70), "line 2: field metadata.request_start_ns: 1.17882e"),
    (AIPERF, _set(1, "metadata", "request_end_ns", value=2**70), "line 2: field metadata.request_end_ns: 1.17882e"),
    (VLLM, _set("ttfts", 0, value=float("inf")), "field ttfts[0]: expected a finite number"),
    (VLLM, _set("ttfts", value={}), "field ttfts: expected a list"),
    (VLLM, _set("input_lens", 0, value=2**70), "field input_lens[0]: expected less than or equal to"),
    (VLLM, _set("input_lens", 0, value=-0.0), "field input_lens[0]: expected an integer"),
    (VLLM, _set("start_times", 0, value=""), 'field start_times[0]: expected a number, got ""'),
    (VLLM, _set("mean_ttft_ms", value="\x1b]0;pwn\x07"), "field mean_ttft_ms: expected a number, got"),
    (GUIDELLM, _set("benchmarks", value={}), "top level: not a known tool's result: expected GuideLLM's benchmarks"),
    (AIPERF, _set(1, "metrics", "time_to_first_token", "unit", value=""), "time_to_first_token.unit: expected"),
    (AIPERF_JSON, _set("time_to_first_token", "p50", value=-1), "time_to_first_token.p50: expected greater"),
    # issue 34's audit (docs/measurements/2026-12-06-issue-34-audit.md): a token time outside its request passed,
    # as an inf mean TTFT, a negative TPOT or a first token after the end; a closed loop of 0 or 10^12 users
    # passed (10^12 slots exhausted memory)
    (VLLM, _set("ttfts", 0, value=1e300), "field ttfts[0]: 1e+300 s after the first request"),
    (VLLM, _set("ttfts", 0, value=5.0), "field ttfts[0]: the first token 5 s after the send, past the request's end"),
    (VLLM, _set("itls", 0, 1, value=1e300), "field itls[0]: 1e+300 s after the first request"),
    (VLLM, _set("itls", 0, 1, value=5.0), "field itls[0]: a token"),
    (VLLM, _set("max_concurrency", value=10**12), "field max_concurrency: expected less than or equal to 1048576"),
    (GUIDELLM, _set("benchmarks", 0, "config", "strategy", value={"type_": "concurrent", "streams": 0}),
     "field benchmarks[0].config.strategy.streams: expected greater than or equal to 1, got 0"),
    (GUIDELLM, _set(*G_REQ, "info", "timings", "first_token_iteration", value=1773482200.0),
     "timings.last_token_iteration: the last token 99.4489 s before the first"),
    (GUIDELLM, _set(*G_REQ, "info", "timings", "last_token_iteration", value=1773482200.0),
     "timings.last_token_iteration: a token 99.7496 s after the send, past the request's end"),
    (GUIDELLM, _set(*G_REQ, "info", "timings", "request_start", value=1773482100.32),
     "timings.first_token_iteration: the first token 0.0118678 s before the send"),
    (BR, _set("scenario", "load", "standardized", "concurrency", value=2.5),
     "field scenario.load.standardized.concurrency: expected a whole number of users up to 1048576"),
    (BR, _set("scenario", "load", "standardized", "concurrency", value=1e300), "concurrency: expected a whole number"),
    (AIPERF_JSON, _set("time_to_first_token", value=[1, 2]), "field time_to_first_token: expected a dictionary"),
    (AIPERF, _set(1, "metrics", "time_to_first_token", "value", value=1e30),
     "line 2: field metrics.time_to_first_token: 1e+27 s after the first request"),
    (AIPERF, _set(1, "metrics", "time_to_first_token", "value", value=5000.0),
     "line 2: field metrics.time_to_first_token: the first token 5 s after the send, past the request's end"),
]
# fmt: on
WHOLE_FILE = [
    (name, kind) for name in (VLLM, GUIDELLM, AIPERF, AIPERF_JSON, BR) for kind in ("binary", "truncated", "empty")
]


def _import_fails(tmp_path: Path, capsys, name: str, content: bytes) -> str:
    """Import `content` as a file called `name`: exit 2, one line naming the file, no traceback, nothing written."""
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / "out"
    assert main(["import", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"batchmark: error: {path}: "), err
    assert not out.exists()
    return err


@pytest.mark.parametrize(("fixture", "change", "message"), BAD, ids=[f"{f}:{m[:40]}" for f, _, m in BAD])
def test_a_wrong_value_names_its_field(tmp_path: Path, capsys, fixture, change, message) -> None:
    err = _import_fails(tmp_path, capsys, fixture, _mutated(fixture, change))
    assert message in err, err


@pytest.mark.parametrize(("fixture", "kind"), WHOLE_FILE)
def test_a_binary_truncated_or_empty_file_is_one_line(tmp_path: Path, capsys, fixture, kind) -> None:
    text = (FIXTURES / fixture).read_bytes()
    content = {"binary": b"\x89PNG\r\n\x1a\n\xff\xfe" + text[:64], "truncated": text[: len(text) // 2], "empty": b""}
    err = _import_fails(tmp_path, capsys, fixture, content[kind])
    expected = {"binary": "file: not UTF-8 text", "truncated": "not valid JSON", "empty": "file: empty"}[kind]
    assert expected in err, err


@pytest.fixture(scope="module")
def concurrency16(tmp_path_factory) -> Path:
    """`vllm bench serve --max-concurrency 16 --request-rate inf --save-detailed`, imported once."""
    return import_file(FIXTURES / "vllm-bench-serve-concurrency16.json", tmp_path_factory.mktemp("c16") / "run")


def test_a_concurrency_limited_vllm_run_is_a_closed_loop_not_lag(concurrency16: Path) -> None:
    source = json.loads((FIXTURES / "vllm-bench-serve-concurrency16.json").read_text())
    assert max(source["queue_times"]) > 1.0  # the slot waits that once read as "schedule lag p99 3,868 ms"
    summary = metrics_of(concurrency16)["engines"]["vllm-bench"]
    assert [f["name"] for f in summary["validity"]["flags"]] == []
    assert summary["schedule_lag"]["percentiles"]["p99"]["value"] == 0.0  # the arrival is the send
    manifest = json.loads((concurrency16 / "manifest.json").read_text())
    assert manifest["settings"]["scenario"] == {"kind": "closed", "users": 16, "think_time_s": 0.0}
    assert manifest["settings"]["open_loop"] is False and manifest["workload"]["closed_loop_users"] == 16
    # throughput as batchmark computes it for a closed loop (steady window over the sends), and the whole-run
    # rate, both against vLLM's own output_throughput (output tokens / duration): within 3%
    for window in ("steady", "whole_run"):
        ours = summary["throughput"][window]["output_token_rate"]
        assert ours == pytest.approx(source["output_throughput"], rel=0.03), window
    # each user (a slot of vLLM's semaphore) runs one request at a time
    records = load_records(concurrency16 / "records.jsonl")
    assert set(records["user"]) == set(range(16))
    for _, mine in records.sort_values("t_sent").groupby("user"):
        assert (mine["t_sent"].to_numpy()[1:] >= mine["t_finish"].to_numpy()[:-1]).all()
    block = metrics_of(concurrency16)["imported"]["vllm-bench"]
    assert summary["requests"]["preemptions"] is None and "unknown" in block["lacks"]["preemptions"]


def test_an_unlimited_rate_without_a_cap_is_offline(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "vllm-bench-serve-concurrency16.json").read_text())
    data["max_concurrency"] = None
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(data))
    run = import_file(path, tmp_path / "run")
    assert json.loads((run / "manifest.json").read_text())["settings"]["scenario"]["kind"] == "offline"
    assert set(load_records(run / "records.jsonl")["t_scheduled"]) == {0.0}  # every request due at the start
    throughput = metrics_of(run)["engines"]["vllm-bench"]["throughput"]
    assert throughput["steady"]["output_token_rate"] is None and "burst" in throughput["steady"]["reason"]
    assert throughput["whole_run"]["output_token_rate"] == pytest.approx(data["output_throughput"], rel=0.03)


def test_guidellm_concurrent_strategy_is_a_closed_loop(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "guidellm-benchmarks.json").read_text())
    data["benchmarks"][0]["config"]["strategy"] = {"type_": "concurrent", "streams": 4}
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(data))
    imported = read(path)
    assert imported.runs[0].scenario.kind == "closed" and imported.runs[0].scenario.users == 4
    ok = [r for r in imported.runs[0].records or [] if r.error_type is None]
    assert ok and all(r.t_scheduled == r.t_sent for r in ok)  # a wait for a free stream is not lag


def test_llm_d_benchmark_report_round_trips(concurrency16: Path, tmp_path: Path, capsys) -> None:
    """A batchmark run directory (here the imported closed loop, summarised by batchmark) out as llm-d's
    Benchmark Report v0.2 and back in: every figure the schema carries comes back unchanged."""
    assert main(["export", str(concurrency16), "--format", "llm-d-br", "--out", str(tmp_path / "br")]) == 0
    path = tmp_path / "br" / "vllm-bench-trial0.json"
    report = json.loads(path.read_text())
    assert report["version"] == "0.2" and report["scenario"]["load"]["standardized"]["concurrency"] == 16
    back = import_file(path, tmp_path / "back")
    summary = metrics_of(concurrency16)["engines"]["vllm-bench"]
    reported = metrics_of(back)["imported"]["batchmark"]["reported"]
    for name in ("ttft_sent", "tpot", "itl", "e2e_sent"):
        assert reported[name]["mean"] == pytest.approx(summary["latency"][name]["mean"], rel=1e-12)
        for label, row in summary["latency"][name]["percentiles"].items():
            assert reported[name]["percentiles"][label] == pytest.approx(row["value"], rel=1e-12), (name, label)
    for name in ("request_rate", "output_token_rate", "total_token_rate"):
        assert reported[name]["mean"] == pytest.approx(summary["throughput"]["whole_run"][name], rel=1e-12)
    records = load_records(concurrency16 / "records.jsonl")
    assert reported["prompt_tokens"]["mean"] == pytest.approx(records["prompt_tokens"].mean())
    assert reported["output_tokens"]["mean"] == pytest.approx(records["output_tokens"].mean())
    assert reported["requests"]["mean"] == summary["requests"]["total"] and reported["failed"]["mean"] == 0
    manifest = json.loads((back / "manifest.json").read_text())
    assert manifest["settings"]["scenario"] == {"kind": "closed", "users": 16, "think_time_s": 0.0}
    # what the schema cannot carry is n/a in the imported run, never 0
    steady = metrics_of(back)["engines"]["batchmark"]["throughput"]["steady"]
    assert steady["output_token_rate"] is None and steady["reason"]


AIPERF_REAL = FIXTURES / "aiperf-0.13.0"


def test_a_file_aiperf_wrote_against_batchmark_serve_imports(tmp_path: Path, capsys) -> None:
    """AIPerf 0.13.0's own files (fixtures/aiperf-0.13.0/README.md): every request, its concurrency as a closed
    loop, the server's output counts (not AIPerf's re-tokenized OSL, which reads 4,600 tokens for the server's
    4,096), and the mapping reproducing AIPerf's own TTFT and latency means, and its TPOT once divided by its OSL."""
    lines = [json.loads(line) for line in (AIPERF_REAL / "profile_export.jsonl").read_text().splitlines()]
    assert main(["import", str(AIPERF_REAL / "profile_export.jsonl"), "--out", str(tmp_path / "run")]) == 0
    printed, run = capsys.readouterr().out, tmp_path / "run"
    records = load_records(run / "records.jsonl").set_index("request_id")
    assert len(records) == 64 and records["error_type"].isna().all()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["settings"]["scenario"] == {"kind": "closed", "users": 16, "think_time_s": 0.0}
    usage = {r["metadata"]["x_request_id"]: r["metrics"]["usage_completion_tokens"]["value"] for r in lines}
    osl = {r["metadata"]["x_request_id"]: r["metrics"]["output_sequence_length"]["value"] for r in lines}
    assert records["output_tokens"].to_dict() == usage and sum(usage.values()) == 4096 and sum(osl.values()) == 4600
    assert (
        "note: output tokens: the server's count (usage.completion_tokens, AIPerf's usage_completion_tokens) "
        "for 64 of 64 requests"
    ) in printed and "reads 4,600 tokens against the server's 4,096 (23 of 64" in printed
    block = metrics_of(run)["imported"]["aiperf"]
    checks = {c["metric"]: c for c in block["checks"]}
    assert checks["ttft_sent"]["agrees"] and checks["e2e_sent"]["agrees"]
    # AIPerf's ITL divides by its OSL: batchmark's TPOT differs by the count, and the check says why. Per request,
    # rescaled to the OSL, it is AIPerf's within 0.5% (its latency ends at the last response, a record's
    # request_end_ns up to 10 ms later)
    assert not checks["tpot"]["agrees"] and "over AIPerf's OSL" in checks["tpot"]["message"]
    for r in lines:
        rid, theirs = r["metadata"]["x_request_id"], r["metrics"]["inter_token_latency"]["value"] / 1e3
        row = records.loc[rid]
        tpot = (row["t_finish"] - row["t_first_token"]) / (row["output_tokens"] - 1)
        assert tpot * (usage[rid] - 1) / (osl[rid] - 1) == pytest.approx(theirs, rel=0.005), rid
    summary = metrics_of(run)["engines"]["aiperf"]
    assert [f["name"] for f in summary["validity"]["flags"]] == []
    aggregates = json.loads((AIPERF_REAL / "profile_export_aiperf.json").read_text())
    rate = summary["throughput"]["whole_run"]["output_token_rate"]
    assert rate == pytest.approx(
        aggregates["total_usage_completion_tokens"]["avg"] / aggregates["benchmark_duration"]["avg"], rel=0.03
    )
    assert rate * 4600 / 4096 == pytest.approx(aggregates["output_token_throughput"]["avg"], rel=0.03)
    # AIPerf's own count stays beside the records', as its file states it
    assert block["reported"]["output_tokens"]["mean"] == 71.875 and block["reported"]["requests"]["mean"] == 64
    assert "re-tokenized" in block["reported"]["output_tokens"]["note"]


def test_aiperf_records_without_a_server_count_keep_aiperfs_count_and_say_so(tmp_path: Path) -> None:
    """Without `usage_completion_tokens` (a server that sends no usage) a record's count is AIPerf's OSL, and the
    note names the definition difference; a record with one keeps the server's."""
    lines = [json.loads(line) for line in (AIPERF_REAL / "profile_export.jsonl").read_text().splitlines()]
    for line in lines[1:]:
        del line["metrics"]["usage_completion_tokens"]
    path = tmp_path / "profile_export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    imported = read(path)
    records = {r.request_id: r.output_tokens for r in imported.runs[0].records or []}
    first = lines[0]["metadata"]["x_request_id"]
    assert records[first] == lines[0]["metrics"]["usage_completion_tokens"]["value"]
    assert all(
        records[x["metadata"]["x_request_id"]] == x["metrics"]["output_sequence_length"]["value"] for x in lines[1:]
    )
    notes = imported.runs[0].notes
    assert any(n.startswith("output tokens: the server's count") and "for 1 of 64" in n for n in notes)
    assert any("AIPerf's OSL for 63 of 64 requests" in n and "a definition difference" in n for n in notes)


def test_a_file_guidellm_wrote_against_batchmark_serve_imports(tmp_path: Path) -> None:
    """GuideLLM 0.8.1's own file (fixtures/guidellm-0.8.1/README.md), through `batchmark import`: its concurrent
    strategy as a closed loop of 4 (no lag flag), every request, and batchmark's figures recomputed from the
    records reproducing GuideLLM's own: mean TTFT per request and overall within 1e-9 (the same timestamps), the
    output token rate within 1% (GuideLLM's is over the same first-send-to-last-end window)."""
    path = FIXTURES / "guidellm-0.8.1" / "benchmarks.json"
    source = json.loads(path.read_text())["benchmarks"][0]
    assert main(["import", str(path), "--out", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["settings"]["scenario"] == {"kind": "closed", "users": 4, "think_time_s": 0.0}
    records = load_records(run / "records.jsonl")
    assert len(records) == source["metrics"]["request_totals"]["total"] == 16 and records["error_type"].isna().all()
    requests = source["requests"]["successful"]
    assert records["output_tokens"].tolist() == [r["output_tokens"] for r in requests]
    ttft = (records["t_first_token"] - records["t_sent"]).to_numpy() * 1e3
    assert ttft == pytest.approx([r["time_to_first_token_ms"] for r in requests], abs=1e-6)
    summary = metrics_of(run)["engines"]["guidellm-concurrent-4"]
    assert summary["validity"]["flags"] == []
    theirs = source["metrics"]
    assert summary["latency"]["ttft_sent"]["mean"] * 1e3 == pytest.approx(
        theirs["time_to_first_token_ms"]["successful"]["mean"], rel=1e-9
    )
    assert summary["throughput"]["whole_run"]["output_token_rate"] == pytest.approx(
        theirs["output_tokens_per_second"]["successful"]["mean"], rel=0.01
    )
    checks = {c["metric"]: c for c in metrics_of(run)["imported"]["guidellm-concurrent-4"]["checks"]}
    assert all(checks[m]["agrees"] for m in ("ttft_sent", "tpot", "e2e_sent"))


@pytest.mark.parametrize(("name", "users"), [("concurrency4.json", 4), ("concurrency16.json", 16)])
def test_a_file_vllm_bench_wrote_against_batchmark_serve_imports(tmp_path: Path, name: str, users: int) -> None:
    """`vllm bench serve` 0.32.0's own files (fixtures/vllm-0.32.0-cpu/README.md), `--max-concurrency N` at an
    unlimited rate: a closed loop of N with no lag flag, every request with vLLM's own TTFT, and batchmark's
    output tok/s within 3% of vLLM's (issue 34's acceptance; vLLM's duration starts before the first send)."""
    path = FIXTURES / "vllm-0.32.0-cpu" / name
    source = json.loads(path.read_text())
    assert main(["import", str(path), "--out", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["settings"]["scenario"] == {"kind": "closed", "users": users, "think_time_s": 0.0}
    records = load_records(run / "records.jsonl")
    assert len(records) == source["completed"] == source["num_prompts"] and records["error_type"].isna().all()
    ttft = (records["t_first_token"] - records["t_sent"]).to_numpy()
    assert ttft == pytest.approx(source["ttfts"], abs=1e-9)
    summary = metrics_of(run)["engines"]["vllm-bench"]
    assert summary["validity"]["flags"] == []
    assert summary["latency"]["ttft_sent"]["mean"] * 1e3 == pytest.approx(source["mean_ttft_ms"], rel=1e-9)
    assert summary["throughput"]["whole_run"]["output_token_rate"] == pytest.approx(
        source["output_throughput"], rel=0.03
    )
    checks = {c["metric"]: c for c in metrics_of(run)["imported"]["vllm-bench"]["checks"]}
    assert all(checks[m]["agrees"] for m in ("ttft_sent", "tpot", "e2e_sent"))


def test_export_of_a_non_run_is_one_line_and_writes_nothing(tmp_path: Path, capsys) -> None:
    (tmp_path / "metrics.json").write_text(json.dumps({"runs": [{"engine": "x", "summary": {"requests": {}}}]}))
    (tmp_path / "manifest.json").write_text("{}")
    assert main(["export", str(tmp_path), "--out", str(tmp_path / "br")]) == 2
    err = capsys.readouterr().err
    assert "metrics.json: field runs[0]: not a batchmark run" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "br").exists()
    assert main(["export", str(tmp_path / "nowhere")]) == 2
    assert "not a run directory (no metrics.json)" in capsys.readouterr().err


IP_YAML = FIXTURES / "inference-perf-0.7.0" / "inference-perf.partial.stage_0.yaml"


def test_a_report_inference_perf_wrote_against_batchmark_serve_imports(tmp_path: Path, capsys) -> None:
    """inference-perf 0.7.0's own Benchmark Report (v0.2.1, YAML; fixtures/inference-perf-0.7.0/README.md): its
    figures come in unchanged under batchmark's names, and the load it does not state is said to be unknown."""
    import yaml

    theirs = yaml.safe_load(IP_YAML.read_text())["results"]["request_performance"]["aggregate"]
    run = import_file(IP_YAML, tmp_path / "run")
    block = metrics_of(run)["imported"]["inference-perf"]
    reported = block["reported"]
    for ours, name in (
        ("ttft_sent", "time_to_first_token"),
        ("tpot", "time_per_output_token"),
        ("e2e_sent", "request_latency"),
        ("itl", "inter_token_latency"),
    ):
        assert reported[ours]["mean"] == theirs["latency"][name]["mean"]  # both in seconds
        assert reported[ours]["percentiles"]["p99"] == theirs["latency"][name]["p99"]
    assert reported["output_token_rate"]["mean"] == theirs["throughput"]["output_token_rate"]["mean"]
    assert reported["request_rate"]["mean"] == theirs["throughput"]["request_rate"]["mean"]
    assert reported["requests"]["mean"] == 64 and reported["failed"]["mean"] == 0
    # inference-perf's TPOT runs between its first and last content chunk (reportgen/br/v0_2/adapter.py), not E2E
    assert reported["tpot"]["note"].startswith("(last content chunk - first content chunk) / (n - 1) in inference-perf")
    notes = " ".join(json.loads((run / "manifest.json").read_text())["imported"]["runs"]["inference-perf"]["notes"])
    assert "v0.2.1 written by inference-perf" in notes and "the loop it ran is unknown here" in notes


def _yaml_fails(tmp_path: Path, capsys, content: bytes) -> str:
    return _import_fails(tmp_path, capsys, "report.yaml", content)


def _ip_yaml_with(*keys, value) -> bytes:
    import yaml

    data = yaml.safe_load(IP_YAML.read_text())
    _set(*keys, value=value)(data)
    return yaml.safe_dump(data).encode()


# fmt: off
YAML_BAD = [
    ("truncated", IP_YAML.read_bytes()[: len(IP_YAML.read_bytes()) // 3] + b"\n  - [", "not valid YAML"),
    ("wrong type", _ip_yaml_with(*BR_AGG, "requests", "total", value="many"),
     "field results.request_performance.aggregate.requests.total"),
    ("NaN", _ip_yaml_with(*BR_AGG, "latency", "request_latency", "mean", value=float("nan")),
     "request_latency.mean: expected a finite number"),
    ("wrong unit", _ip_yaml_with(*BR_AGG, "latency", "time_to_first_token", "units", value="fortnights"),
     "time_to_first_token.units: expected 'ms' or 's'"),
    ("alias", b"version: '0.2'\nrun: &r {uid: x}\nresults: *r\n", "an alias (*name): a result file has none"),
    ("a list", b"- 1\n- 2\n", "top level: expected a JSON object, got list"),
    ("empty", b"", "file: empty"),
    ("binary", b"\x89PNG\r\n\x1a\n\xff\xfe", "file: not UTF-8 text"),
]
# fmt: on


@pytest.mark.parametrize(("case", "content", "message"), YAML_BAD, ids=[c for c, _, _ in YAML_BAD])
def test_a_bad_yaml_report_is_one_line(tmp_path: Path, capsys, case, content, message) -> None:
    err = _yaml_fails(tmp_path, capsys, content)
    assert message in err, err
