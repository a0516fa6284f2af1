"""`batchmark import` of inference-perf 0.7.0's files (fixtures/inference-perf-0.7.0/README.md, `poisson/`): its
per-request file becomes records whose recomputed figures reproduce inference-perf's own where the definitions agree,
and the `config.yaml` beside its files says the load it ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.importers import read
from harness.metrics import load_records

POISSON = Path(__file__).parent / "fixtures" / "inference-perf-0.7.0" / "poisson"
PER_REQUEST = "per_request_lifecycle_metrics.json"
REPORT = "inference-perf.partial.stage_0.yaml"
FILES = (PER_REQUEST, REPORT, "config.yaml", "stage_0_lifecycle_metrics.json")


def _folder(tmp_path: Path, *names: str) -> Path:
    """A copy of the fixture's output folder holding only `names` (all of it by default)."""
    folder = tmp_path / "inference-perf"
    folder.mkdir()
    for name in names or FILES:
        shutil.copy(POISSON / name, folder / name)
    return folder


def _import(path: Path, out: Path, capsys) -> tuple[dict, dict, str]:
    """Import `path`: its metrics.json, its manifest's one imported run, and what the command printed."""
    assert main(["import", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    (run,) = manifest["imported"]["runs"].values()
    return json.loads((out / "metrics.json").read_text()), {**run, "manifest": manifest}, printed


def test_the_per_request_file_inference_perf_wrote_imports(tmp_path: Path, capsys) -> None:
    """Every request as a record, the open loop at 20 req/s from config.yaml, and the recomputed figures against
    inference-perf's own stage report. Tolerance 1e-9 relative where the definitions agree (TTFT, E2E, request rate,
    and the output rate once both count the same tokens): both come from the same clock readings, so only float
    rounding separates them. TPOT is rebuilt the way inference-perf counts it (its re-tokenized count, ending at the
    last content chunk) to the same 1e-9; batchmark's own TPOT differs by that definition, and the check says so."""
    entries = json.loads((POISSON / PER_REQUEST).read_text())
    theirs = yaml.safe_load((POISSON / REPORT).read_text())["results"]["request_performance"]["aggregate"]
    stage = json.loads((POISSON / "stage_0_lifecycle_metrics.json").read_text())
    metrics, run, printed = _import(POISSON / PER_REQUEST, tmp_path / "run", capsys)
    records = load_records(tmp_path / "run" / "records.jsonl")
    assert len(records) == len(entries) == theirs["requests"]["total"] == stage["load_summary"]["count"] == 40
    assert records["error_type"].isna().all() and theirs["requests"]["failures"] == 0
    assert run["manifest"]["settings"]["scenario"] == {"kind": "open", "users": 1, "think_time_s": 0.0}
    assert run["settings"]["load_type"] == "poisson" and run["settings"]["rate_qps"] == 20.0
    assert "unknown" not in " ".join(run["notes"])
    # the server's count, not inference-perf's re-tokenization (2,853 tokens; 16 requests read more than 64)
    server = [e["info"]["response_metrics"]["server_usage"]["completion_tokens"] for e in entries]
    client = [e["info"]["response_metrics"]["output_tokens"] for e in entries]
    assert records["output_tokens"].tolist() == server and sum(server) == 2560 and sum(client) == 2853
    assert "reads 2,853 tokens against the server's 2,560 (16 of 40 requests differ)" in printed
    # the send is start_time, the first token the first content chunk, the finish end_time
    t0 = min(e["start_time"] for e in entries)
    sent = [e["start_time"] - t0 for e in entries]
    first = [e["info"]["response_metrics"]["output_token_times"][0] - t0 for e in entries]
    assert records["t_sent"].tolist() == pytest.approx(sent, abs=1e-9)
    assert records["t_scheduled"].tolist() == records["t_sent"].tolist()  # no scheduled time in the file
    assert records["t_first_token"].tolist() == pytest.approx(first, abs=1e-9)
    assert records["t_finish"].tolist() == pytest.approx([e["end_time"] - t0 for e in entries], abs=1e-9)
    summary = metrics["engines"]["inference-perf"]
    latency = theirs["latency"]
    for ours, name in (("ttft_sent", "time_to_first_token"), ("e2e_sent", "request_latency")):
        assert summary["latency"][ours]["mean"] == pytest.approx(latency[name]["mean"], rel=1e-9)
        assert summary["latency"][ours]["percentiles"]["p50"]["value"] == pytest.approx(latency[name]["p50"], rel=1e-9)
    whole, rates = summary["throughput"]["whole_run"], theirs["throughput"]
    # inference-perf's window is first send to last end, batchmark's whole run first arrival (= send) to last finish
    assert whole["request_rate"] == pytest.approx(rates["request_rate"]["mean"], rel=1e-9)
    assert whole["output_token_rate"] == pytest.approx(rates["output_token_rate"]["mean"] * 2560 / 2853, rel=1e-9)
    assert summary["throughput"]["steady"]["output_token_rate"] is not None  # an open loop has a steady window
    # inference-perf's TPOT: (last content chunk - first) / (its re-tokenized count - 1), from the same records
    tpot = [
        (r.token_times[-1] - r.t_first_token) / (n - 1)
        for r, n in zip(read(POISSON / PER_REQUEST).runs[0].records or [], client, strict=True)
    ]
    assert sum(tpot) / len(tpot) == pytest.approx(latency["time_per_output_token"]["mean"], rel=1e-9)
    checks = {c["metric"]: c for c in metrics["imported"]["inference-perf"]["checks"]}
    assert checks["ttft_sent"]["agrees"] and checks["e2e_sent"]["agrees"]
    assert not checks["tpot"]["agrees"] and "n re-tokenized" in checks["tpot"]["message"]
    assert summary["validity"]["flags"] == []
    # inference-perf's own schedule delay, beside the records' zero lag
    reported = metrics["imported"]["inference-perf"]["reported"]
    assert reported["schedule_lag"]["mean"] == stage["load_summary"]["schedule_delay"]["mean"]
    assert "4 of 40 requests streamed more tokens than chunks" in printed


def test_the_stage_report_beside_config_yaml_is_an_open_loop(tmp_path: Path, capsys) -> None:
    """The partial report states no load, but config.yaml beside it does: an open loop at stage 0's rate, and no
    "unknown" note; inference-perf's schedule delay fills the aggregates' schedule lag."""
    metrics, run, _ = _import(POISSON / REPORT, tmp_path / "run", capsys)
    assert run["manifest"]["settings"]["scenario"] == {"kind": "open", "users": 1, "think_time_s": 0.0}
    notes = " ".join(run["notes"])
    assert "unknown" not in notes and "the load from config.yaml: load.type poisson, stage 0, 20 req/s for 2 s" in notes
    assert run["settings"]["rate_qps"] == 20.0 and run["settings"]["duration_s"] == 2
    assert metrics["engines"]["inference-perf"]["schedule_lag"]["mean"] == pytest.approx(0.0003837987432234513)


def _with_load(folder: Path, load: dict) -> None:
    config = yaml.safe_load((folder / "config.yaml").read_text())
    config["load"].update(load)
    (folder / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.parametrize("name", [PER_REQUEST, REPORT])
def test_a_concurrent_config_is_a_closed_loop(tmp_path: Path, capsys, name: str) -> None:
    folder = _folder(tmp_path)
    _with_load(folder, {"type": "concurrent", "stages": [{"num_requests": 40, "concurrency_level": 8}]})
    _, run, _ = _import(folder / name, tmp_path / "run", capsys)
    assert run["manifest"]["settings"]["scenario"] == {"kind": "closed", "users": 8, "think_time_s": 0.0}
    assert run["manifest"]["workload"]["closed_loop_users"] == 8 and run["settings"]["concurrency"] == 8
    assert "load.type concurrent, stage 0, concurrency_level 8: a closed loop" in " ".join(run["notes"])
    if name == PER_REQUEST:  # each record's user: the slot that came free first, as for vLLM's closed loops
        users = load_records(tmp_path / "run" / "records.jsonl")["user"]
        assert users.notna().all() and set(users) <= set(range(8))


@pytest.mark.parametrize(
    ("load", "why"),
    [
        ({"type": "trace_replay"}, "load.type 'trace_replay': a trace replay's timing comes from its trace"),
        ({"sweep": {"type": "linear"}}, "load.sweep: inference-perf generated its stages at run time"),
        ({"sweep": {"type": "geometric"}, "stages": []}, "load.sweep: inference-perf generated its stages at run time"),
    ],
)
@pytest.mark.parametrize("name", [PER_REQUEST, REPORT])
def test_a_load_batchmark_does_not_map_stays_unknown(tmp_path: Path, capsys, name: str, load: dict, why: str) -> None:
    folder = _folder(tmp_path)
    _with_load(folder, load)
    _, run, _ = _import(folder / name, tmp_path / "run", capsys)
    notes = " ".join(run["notes"])
    assert why in notes and "the loop it ran is unknown here" in notes
    assert run["manifest"]["settings"]["scenario"]["kind"] == "open"  # batchmark's default, said to be so


def test_stages_of_different_concurrency_are_unknown_per_request_but_each_report_has_its_own(tmp_path, capsys) -> None:
    """The per-request file mixes the stages and says not which request is whose; a partial report is one stage's."""
    folder = _folder(tmp_path)
    stages = [{"num_requests": 8, "concurrency_level": 2}, {"num_requests": 8, "concurrency_level": 4}]
    _with_load(folder, {"type": "concurrent", "stages": stages})
    _, run, _ = _import(folder / PER_REQUEST, tmp_path / "run", capsys)
    notes = " ".join(run["notes"])
    assert "2 concurrent stages of different concurrency in one file" in notes and "unknown here" in notes
    assert run["settings"]["stage_list"] == stages
    _, run, _ = _import(folder / REPORT, tmp_path / "run-report", capsys)
    assert run["manifest"]["settings"]["scenario"] == {"kind": "closed", "users": 2, "think_time_s": 0.0}


def test_without_config_yaml_the_loop_is_unknown(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path, PER_REQUEST)
    _, run, _ = _import(folder / PER_REQUEST, tmp_path / "run", capsys)
    assert "no config.yaml beside the file" in " ".join(run["notes"]) and run["settings"] == {}


def _fails(tmp_path: Path, capsys, path: Path, named: Path) -> str:
    """Importing `path` fails: exit 2, one line naming `named` (the file at fault), nothing written."""
    out = tmp_path / "out"
    assert main(["import", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"batchmark: error: {named}: "), err
    assert not out.exists()
    return err


def _entries_with(change) -> bytes:
    entries = json.loads((POISSON / PER_REQUEST).read_text())
    change(entries)
    return json.dumps(entries).encode()  # NaN stays NaN, as Python's json writes it


def _set(i: int, *keys: str, value):
    def change(entries: list) -> None:
        node = entries[i]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


RM = ("info", "response_metrics")
WHOLE = (POISSON / PER_REQUEST).read_bytes()
# fmt: off
BAD_FILE = [
    ("truncated", WHOLE[: len(WHOLE) // 2], "not valid JSON, truncated?"),
    ("empty", b"", "file: empty"),
    ("empty list", b"[]", "top level: an empty list"),
    ("binary", b"\x89PNG\r\n\x1a\n\xff\xfe" + WHOLE[:64], "file: not UTF-8 text"),
    ("string start", _entries_with(_set(3, "start_time", value="17219.3")),
     'field [3].start_time: expected a number, got "17219.3"'),
    ("NaN end", _entries_with(_set(2, "end_time", value=float("nan"))), "field [2].end_time: expected a finite number"),
    ("bool chunk", _entries_with(_set(1, *RM, "chunk_times", value=[True])),
     "field [1].info.response_metrics.chunk_times[0]: expected a number, got true"),
    ("float count", _entries_with(_set(0, *RM, "server_usage", "completion_tokens", value=2.5)),
     "field [0].info.response_metrics.server_usage.completion_tokens: expected an integer"),
    ("negative prompt", _entries_with(_set(4, "info", "request_metrics", "text", "input_tokens", value=-1)),
     "field [4].info.request_metrics.text.input_tokens: expected greater than or equal to 0"),
    ("end before start", _entries_with(_set(5, "end_time", value=17219.0)), "field [5].end_time: "),
    ("chunk before send", _entries_with(_set(0, *RM, "chunk_times", 0, value=17200.0)),
     "field [0].info.response_metrics.chunk_times[0]: the first token 19.3214 s before the send"),
    ("not streamed", _entries_with(lambda e: e[0]["info"]["response_metrics"].update(chunk_times=[],
                                                                                      output_token_times=[])),
     "field [0].info.response_metrics.chunk_times: missing: a non-streamed request"),
    ("an entry not an object", _entries_with(_set(6, "info", value=3)), "field [6].info: expected a dictionary"),
    ("far future", _entries_with(_set(7, "end_time", value=1e300)), "field [7].end_time: 1e+300 s after"),
]
# fmt: on


@pytest.mark.parametrize(("case", "content", "message"), BAD_FILE, ids=[c for c, _, _ in BAD_FILE])
def test_a_bad_per_request_file_is_one_line(tmp_path: Path, capsys, case: str, content: bytes, message: str) -> None:
    path = tmp_path / PER_REQUEST
    path.write_bytes(content)
    err = _fails(tmp_path, capsys, path, path)
    assert message in err, err


CONFIG = (POISSON / "config.yaml").read_bytes()
# fmt: off
BAD_CONFIG = [
    ("truncated", CONFIG[: len(CONFIG) // 3] + b"\n  - [", "not valid YAML"),
    ("empty", b"", "file: empty"),
    ("binary", b"\x89PNG\r\n\x1a\n\xff\xfe", "file: not UTF-8 text"),
    ("a list", b"- 1\n", "top level: expected a mapping"),
    ("no load", b"api: {type: completion}\n", "field load: missing"),
    ("load type a number", b"load: {type: 5, stages: [{rate: 20, duration: 2}]}\n",
     "field load.type: expected a string"),
    ("rate a string", b"load: {type: poisson, stages: [{rate: fast, duration: 2}]}\n",
     'field load.stages[0].rate: expected a number, got "fast"'),
    ("rate NaN", b"load: {type: poisson, stages: [{rate: .nan, duration: 2}]}\n",
     "field load.stages[0].rate: expected a finite number"),
    ("no rate", b"load: {type: constant, stages: [{duration: 2}]}\n",
     "field load.stages[0].rate: missing: a constant stage states its rate"),
    ("no users", b"load: {type: concurrent, stages: [{num_requests: 8}]}\n",
     "field load.stages[0].concurrency_level: missing"),
    ("zero users", b"load: {type: concurrent, stages: [{num_requests: 8, concurrency_level: 0}]}\n",
     "field load.stages[0].concurrency_level: expected greater than or equal to 1"),
    ("no stage", b"load: {type: poisson, stages: []}\n", "field load.stages: no stage"),
]
# fmt: on


@pytest.mark.parametrize("name", [PER_REQUEST, REPORT])
@pytest.mark.parametrize(("case", "content", "message"), BAD_CONFIG, ids=[c for c, _, _ in BAD_CONFIG])
def test_a_bad_config_yaml_is_one_line_naming_it(tmp_path: Path, capsys, name, case, content, message) -> None:
    folder = _folder(tmp_path)
    (folder / "config.yaml").write_bytes(content)
    err = _fails(tmp_path, capsys, folder / name, folder / "config.yaml")
    assert message in err, err


STAGE = "stage_0_lifecycle_metrics.json"
# fmt: off
BAD_BESIDE = [
    (REPORT, b"\x89PNG\r\n\x1a\n\xff\xfe", "file: not UTF-8 text"),
    (REPORT, (POISSON / REPORT).read_bytes()[:500] + b"\n  - [", "not valid YAML"),
    (REPORT, b"version: '0.2.1'\nrun: {uid: x}\nresults: {request_performance: {aggregate: {requests: {total: -1}}}}\n",
     "field results.request_performance.aggregate.requests.total: expected greater than or equal to 0"),
    (STAGE, b'{"load_summary": {"schedule_delay": {"mean": "slow"}}}',
     'field load_summary.schedule_delay.mean: expected a number, got "slow"'),
    (STAGE, b'{"load_summary": ', "file: not readable JSON"),
]
# fmt: on


@pytest.mark.parametrize(("name", "content", "message"), BAD_BESIDE, ids=[f"{n}:{m[:30]}" for n, _, m in BAD_BESIDE])
def test_a_bad_file_beside_the_per_request_file_is_one_line_naming_it(tmp_path, capsys, name, content, message) -> None:
    """The stage report and stage summary the import reads beside the per-request file are checked as strictly."""
    folder = _folder(tmp_path)
    (folder / name).write_bytes(content)
    err = _fails(tmp_path, capsys, folder / PER_REQUEST, folder / name)
    assert message in err, err


def test_a_request_inference_perf_says_failed_is_a_failed_record(tmp_path: Path, capsys) -> None:
    """An entry with `error` (a broken stream here, as `openai_client.py` records one) is a failure of type
    imported_error carrying inference-perf's type and message; the others stay as they were."""
    folder = _folder(tmp_path, PER_REQUEST)
    entries = json.loads((folder / PER_REQUEST).read_text())
    entries[3]["error"] = {"error_type": "ClientPayloadError", "error_msg": "Response payload is not completed"}
    entries[3]["info"] = {"request_metrics": {"text": {"input_tokens": 0}}}
    (folder / PER_REQUEST).write_text(json.dumps(entries))
    metrics, _, _ = _import(folder / PER_REQUEST, tmp_path / "run", capsys)
    records = load_records(tmp_path / "run" / "records.jsonl").set_index("request_id")
    failed = records.loc["inference-perf-000003"]
    assert failed["error_type"] == "imported_error" and failed["t_first_token"] != failed["t_first_token"]  # NaN
    assert failed["error_message"] == "ClientPayloadError: Response payload is not completed"
    requests = metrics["engines"]["inference-perf"]["requests"]
    assert requests["failed"] == 1 and requests["succeeded"] == 39
