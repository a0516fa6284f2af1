"""Class targets in a workload spec (`[[slo_classes]]`, issue #33 item 3): the same fields and checks as
`--slo-class` (workloads/slo_targets.py); a spec-only run measures each class against the spec's targets; a
`--slo-class` of the same name overrides them, said in the console and recorded with its source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main

SPEC = """requests = 12
[[tenants]]
name = "chat"
rate = 20.0
input = 16
output = 4
slo_class = "gold"

[[tenants]]
name = "bulk"
rate = 20.0
input = 16
output = 4
slo_class = "bronze"

[[slo_classes]]
name = "gold"
ttft_ms = {gold}

[[slo_classes]]
name = "bronze"
e2e_ms = 30000
"""


def _run(tmp_path: Path, text: str, *flags: str) -> tuple[int, Path]:
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    out = tmp_path / "run"
    argv = [
        "run",
        "--workload",
        str(spec),
        "--engine",
        "zero",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
        *flags,
    ]
    return main(argv), out


def test_a_spec_only_run_measures_each_class_against_the_specs_targets(tmp_path: Path) -> None:
    code, out = _run(tmp_path, SPEC.format(gold="1e-6"))  # 1 ns: no request can meet it
    assert code == 0
    settings = json.loads((out / "manifest.json").read_text())["settings"]
    assert settings["slo_classes"]["gold"]["ttft_s"] == pytest.approx(1e-9)
    assert settings["slo_classes"]["bronze"]["e2e_s"] == 30.0
    assert settings["slo_class_sources"] == {"gold": f"{tmp_path / 's.toml'}:16", "bronze": f"{tmp_path / 's.toml'}:20"}
    classes = json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]["slo_classes"]
    assert classes["gold"]["attainment"] == 0.0 and classes["gold"]["binding"] == "ttft"
    assert classes["bronze"]["attainment"] == 1.0
    ranks = {json.loads(line)["slo_class"]: json.loads(line)["priority"] for line in (out / "records.jsonl").open()}
    assert ranks == {"gold": 0, "bronze": 1}  # the spec's order is the rank, as --slo-class's is


def test_a_cli_class_of_the_same_name_overrides_the_spec_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(tmp_path, SPEC.format(gold="1e-6"), "--slo-class", "gold:ttft_ms=60000")
    assert code == 0
    said = capsys.readouterr().out
    assert "--slo-class gold overrides the spec's targets (ttft 1e-06 ms" in said and "with ttft 60000 ms" in said
    settings = json.loads((out / "manifest.json").read_text())["settings"]
    assert settings["slo_classes"]["gold"]["ttft_s"] == 60.0
    assert settings["slo_class_sources"]["gold"] == f"--slo-class (overrides {tmp_path / 's.toml'}:16)"
    assert (
        json.loads((out / "metrics.json").read_text())["runs"][0]["summary"]["slo_classes"]["gold"]["attainment"] == 1.0
    )


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (("ttft_ms = {gold}", "ttft_ms = nan"), "s.toml:18: slo_classes[0].ttft_ms: ttft_ms=nan must be a positive"),
        (("ttft_ms = {gold}", "ttft_ms = inf"), "s.toml:18: slo_classes[0].ttft_ms: ttft_ms=inf must be a positive"),
        (("e2e_ms = 30000", "e2e_ms = -5"), "s.toml:22: slo_classes[1].e2e_ms: e2e_ms=-5 must be a positive"),
        (("e2e_ms = 30000", "e2e_ms = 0"), "s.toml:22: slo_classes[1].e2e_ms: e2e_ms=0 must be a positive"),
        (("ttft_ms = {gold}", 'ttft_ms = "1000"'), "s.toml:18: slo_classes[0].ttft_ms: ttft_ms='1000' is not a number"),
        (("ttft_ms = {gold}", "ttft_ms = true"), "s.toml:18: slo_classes[0].ttft_ms: ttft_ms=True is not a number"),
        (("ttft_ms = {gold}", "ttfb_ms = 5"), "s.toml:18: slo_classes[0].ttfb_ms: unknown key"),
        (('name = "bronze"', 'name = "gold"'), "s.toml:21: slo_classes[1].name: class 'gold' given twice"),
        (('name = "bronze"', "name = 3"), "s.toml:21: slo_classes[1].name: expected an SLO class name"),
    ],
)
def test_bad_spec_targets_are_one_line_naming_the_file_and_field_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], where: str
) -> None:
    code, out = _run(tmp_path, SPEC.replace(*edit).format(gold="1000"))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert str(tmp_path / where) in err, err
    assert not out.exists()
