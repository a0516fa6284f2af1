"""The bundled real traces: acceptance numbers, checksums, licences, and that they ship as package data."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from harness.cli import main
from workloads import load_workload
from workloads.bundled import BUNDLED, TRACES_DIR


def describe_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["workload", "describe", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_azure_conv_acceptance_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    d = describe_json(capsys, "azure-conv")
    assert d["requests"] == 19_366
    assert d["mean_rate_rps"] == pytest.approx(5.53, abs=0.005)  # (rows - 1) / span = 19365 / 3501.72 s
    assert d["output_tokens"]["p50"] == 129
    assert d["span_s"] == pytest.approx(3501.7, abs=0.1)
    assert d["interarrival_cv"] == pytest.approx(1.09, abs=0.01)
    assert d["peak_1s_requests"] == 16  # SOURCE.md: peak in one 1 s window
    assert d["input_tokens"] == {
        "min": 2,
        "mean": pytest.approx(1154.7, abs=0.05),
        "p50": 1020,
        "p90": 2734.5,
        "p99": 4142,
        "max": 14050,
    }
    assert d["output_tokens"]["p90"] == 424 and d["output_tokens"]["p99"] == 601
    assert d["output_tokens"]["max"] == 1000
    assert re.fullmatch(r"[0-9a-f]{64}", d["fingerprint"])
    assert d["notes"] == []


def test_azure_code_acceptance_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    d = describe_json(capsys, "azure-code")
    assert d["requests"] == 8_819
    assert d["interarrival_cv"] == pytest.approx(13.15, abs=0.01)
    assert d["mean_rate_rps"] == pytest.approx(2.57, abs=0.005)
    assert d["peak_1s_requests"] == 67
    assert (d["output_tokens"]["p50"], d["output_tokens"]["p90"], d["output_tokens"]["max"]) == (13, 55, 1899)
    assert d["output_tokens"]["p99"] == pytest.approx(251.5, abs=0.05)
    assert (d["input_tokens"]["p50"], d["input_tokens"]["max"]) == (1469, 7437)


@pytest.mark.parametrize(
    ("name", "rows", "span", "cv", "peak", "in_p50", "out_p50", "blocks", "unique"),
    [
        ("mooncake-conv", 12_031, 3537.0, 3.03, 28, 6909, 350, 288_500, 182_790),
        ("mooncake-synthetic", 3_993, 1022.0, 1.01, 13, 11587, 69, 121_877, 43_924),
    ],
)
def test_mooncake_matches_source_md(
    name: str, rows: int, span: float, cv: float, peak: int, in_p50: int, out_p50: int, blocks: int, unique: int
) -> None:
    d = load_workload(name).describe()
    assert d["requests"] == rows
    assert d["span_s"] == pytest.approx(span, abs=0.05)
    assert d["interarrival_cv"] == pytest.approx(cv, abs=0.01)
    assert d["peak_1s_requests"] == peak
    assert (d["input_tokens"]["p50"], d["output_tokens"]["p50"]) == (in_p50, out_p50)
    assert (d["prefix_blocks"]["total"], d["prefix_blocks"]["unique"]) == (blocks, unique)


def test_mooncake_hash_ids_cover_the_prompt() -> None:
    # SOURCE.md: len(hash_ids) == ceil(input_length / 512) on every row; the reader keeps them all.
    for r in load_workload("mooncake-synthetic").requests:
        assert len(r.prefix_hash_ids) == -(-r.input_tokens // 512)


@pytest.mark.parametrize("name", list(BUNDLED))
def test_bundled_bytes_match_source_md_checksums(name: str) -> None:
    trace = BUNDLED[name]
    source = (trace.path.parent / "SOURCE.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(trace.path.read_bytes()).hexdigest()
    assert f"| {trace.path.name} | {trace.path.stat().st_size} | {digest} |" in source
    assert load_workload(name).spec["source"]["sha256"] == digest


@pytest.mark.parametrize(
    ("folder", "licence", "citation"),
    [
        ("azure_llm_2023", "CC BY 4.0", "Splitwise"),
        ("mooncake", "Apache License, Version 2.0", "FAST 25"),
    ],
)
def test_each_trace_folder_ships_source_licence_and_citation(folder: str, licence: str, citation: str) -> None:
    path = TRACES_DIR / folder
    note = (path / "LICENSE.md").read_text(encoding="utf-8")
    assert licence in note and citation in note
    assert (path / "SOURCE.md").is_file()
    # An __init__.py makes setuptools' packages.find include the folder, so its data files get packaged.
    assert (path / "__init__.py").is_file() and (TRACES_DIR / "__init__.py").is_file()
    if folder == "mooncake":
        assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in (path / "LICENSE-APACHE").read_text(
            encoding="utf-8"
        )


def test_a_generated_splitwise_trace_is_recognised(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """What splitwise-sim's generate_trace.py writes (traces/rr_conv_<rate>.csv): Poisson arrivals in seconds."""
    rows = ["request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size"]
    rows += [f"{i},2,0,{0.02 + 0.37 * i:.6f},1,{100 + 7 * i},{20 + i}" for i in range(5)]
    path = tmp_path / "rr_conv_50.csv"
    path.write_text("\n".join(rows) + "\n")
    d = describe_json(capsys, str(path))
    assert d["requests"] == 5 and d["span_s"] == pytest.approx(4 * 0.37)
    assert (d["input_tokens"]["max"], d["output_tokens"]["max"]) == (128, 24)
    assert load_workload(str(path)).spec["source"]["format"] == "splitwise"
