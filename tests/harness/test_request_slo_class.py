"""`slo_class` as a request field (issue #33 item 3): from a trace column or a spec tenant, with precedence
request field > spec tenant > tenant mapping; recorded per request; an unknown class is one line at its source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.api import Request
from engines.http.payload import build_body
from harness.cli import main
from harness.loadgen import Scheduled
from harness.loadgen.classes import apply_classes
from harness.metrics.slo_classes import parse_slo_class
from workloads import load_workload

CLASSES = ["--slo-class", "gold:ttft_ms=1000", "--slo-class", "bronze:ttft_ms=30000"]
TRACE = """arrival_s,input_tokens,output_tokens,tenant,slo_class
0.00,16,4,gold,
0.05,16,4,gold,bronze
0.10,16,4,other,gold
0.15,16,4,other,
"""
SPEC = """requests = 12
[[tenants]]
name = "chat"
rate = 20.0
input = 16
output = 4
slo_class = "{cls}"

[[tenants]]
name = "bronze"
rate = 20.0
input = 16
output = 4
"""


def _run(tmp_path: Path, workload: Path, *flags: str) -> tuple[int, Path]:
    out = tmp_path / "run"
    argv = [
        "run",
        "--workload",
        str(workload),
        "--engine",
        "zero",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
        *flags,
    ]
    return main(argv), out


def _records(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    return {r["request_id"]: r for r in rows}


def test_precedence_request_field_then_tenant_mapping_and_records_carry_it(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    code, out = _run(tmp_path, trace, *CLASSES)
    assert code == 0
    by_id = _records(out)
    # row 1: no field, tenant gold -> gold; row 2: field bronze beats tenant gold; row 3: field gold;
    # row 4: neither -> unclassed
    assert [by_id[f"r00000{i}"]["slo_class"] for i in range(4)] == ["gold", "bronze", "gold", None]
    assert [by_id[f"r00000{i}"]["priority"] for i in range(4)] == [0, 1, 0, 2]  # the class's rank
    requests = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert [r.get("slo_class") for r in requests] == [None, "bronze", "gold", None]  # the workload's own field
    classes = json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]["slo_classes"]
    assert classes["gold"]["requests"] == 2 and classes["bronze"]["requests"] == 1


def test_a_spec_tenant_field_beats_the_tenant_name(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(cls="gold"))
    workload = load_workload(str(spec))
    assert {r.tenant: r.slo_class for r in workload.requests} == {"chat": "gold", "bronze": None}
    assert workload.class_sources == {"gold": f"{spec}:7: tenants[0].slo_class"}
    assert workload.spec["source"]["tenants"][0]["slo_class"] == "gold"
    assert "slo_class" not in workload.spec["source"]["tenants"][1]  # specs without it stay as they were
    unnamed_path = tmp_path / "u.toml"
    unnamed_path.write_text(SPEC.replace('slo_class = "{cls}"\n', ""))
    unnamed = load_workload(str(unnamed_path))
    assert unnamed.fingerprint() != workload.fingerprint()  # the class is part of what was replayed
    schedule = [
        Scheduled(Request(r.request_id, [1], 1, tenant=r.tenant, slo_class=r.slo_class), 0.0) for r in workload.requests
    ]
    classes = (parse_slo_class("gold:ttft_ms=1000"), parse_slo_class("bronze:ttft_ms=30000"))
    classed = {s.request.tenant: s.request.slo_class for s in apply_classes(schedule, classes, 0.25)}
    assert classed == {"chat": "gold", "bronze": "bronze"}  # the field, then the tenant mapping
    first = apply_classes(schedule, classes, 0.25)[0].request
    body = build_body(
        first,
        api="completions",
        model="m",
        use_ids=True,
        tokenizer=None,
        include_usage=False,
        return_token_ids=False,
        extra={},
    )
    assert body["priority"] == 0  # an HTTP target gets the field's class as vLLM's priority
    assert {s.request.slo_class for s in apply_classes(schedule, (), 0.25)} == {None}  # no targets: unclassed


@pytest.mark.parametrize(
    ("kind", "where"),
    [("trace", "t.csv:4: slo_class"), ("spec", "s.toml:7: tenants[0].slo_class")],
)
def test_an_unknown_class_is_one_line_at_its_source_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, where: str
) -> None:
    path = tmp_path / ("t.csv" if kind == "trace" else "s.toml")
    path.write_text(TRACE.replace(",gold\n", ",platinum\n") if kind == "trace" else SPEC.format(cls="platinum"))
    code, out = _run(tmp_path, path, *CLASSES)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{tmp_path / where}: unknown SLO class 'platinum'; the run defines gold, bronze" in err, err
    assert not out.exists()


def test_classes_named_without_slo_class_flags_are_unused_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    code, out = _run(tmp_path, trace)
    assert code == 0
    assert "names SLO classes (bronze, gold) but neither --slo-class" in capsys.readouterr().out
    assert {r["slo_class"] for r in _records(out).values()} == {None}


def test_a_replay_of_requests_jsonl_classes_requests_as_the_run_did(tmp_path: Path) -> None:
    """A twin replays a run's requests.jsonl (harness/simulation.py); it used to keep each request's class but not
    the class's rank as its priority nor its admission target, so a priority twin scheduled them as equals."""
    from harness.simulation import schedule_from_run

    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    code, out = _run(tmp_path, trace, *CLASSES)
    assert code == 0
    by_id = _records(out)
    replayed = [s.request for s in schedule_from_run(out)]
    assert [(r.slo_class, r.priority) for r in replayed] == [
        (by_id[r.request_id]["slo_class"], by_id[r.request_id]["priority"]) for r in replayed
    ]
    assert [r.priority for r in replayed] == [0, 1, 0, 2]
    # the most urgent class is never refused; bronze's admission aims at its TTFT target times the headroom
    assert [r.admission_slo_s for r in replayed] == [float("inf"), 30.0 * 0.25, float("inf"), None]


@pytest.mark.parametrize(("classes", "noted"), [((), True), (("chat:ttft_ms=900",), False)])
def test_a_class_header_without_classes_is_said(classes: tuple[str, ...], noted: bool) -> None:
    """Issue #33 audit: `class_header` with no `--slo-class` classes no request, so the header is never sent;
    said before the run rather than silently ignored."""
    from harness.engine_specs import parse_engine_specs
    from harness.loadgen.classes import class_header_notes

    specs = parse_engine_specs(["http:url=http://127.0.0.1:9,class_header=X-SLO-Class", "sim"], {})
    notes = class_header_notes(specs, [parse_slo_class(text) for text in classes])
    assert notes == (
        [
            "--engine http: class_header X-SLO-Class: no --slo-class is given, so no request carries a "
            "class and the header is never sent"
        ]
        if noted
        else []
    )
