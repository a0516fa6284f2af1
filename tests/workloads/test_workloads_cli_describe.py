"""`batchmark workload describe|list`: the text and JSON outputs and every flag reaching the workload."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import args as shared
from harness.cli import main
from harness.cli import workload as cmd_workload
from workloads import list_presets, load_workload


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["workload", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_register_sets_run_functions() -> None:
    parser = argparse.ArgumentParser()
    cmd_workload.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["workload", "describe", "chat-small", "--rate", "3", "--jitter"])
    assert args.run is cmd_workload.run_describe
    assert shared.workload_overrides(args)["rate"] == 3.0 and shared.workload_overrides(args)["jitter"]
    assert parser.parse_args(["workload", "list"]).run is cmd_workload.run_list


def test_describe_text(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "describe", "azure-conv")
    lines = {line[:17].strip(): line[18:] for line in out.splitlines()}  # "key" padded to 17, a space, value
    assert lines["requests"] == "19,366"
    assert lines["mean rate"] == "5.53 req/s"
    assert lines["inter-arrival CV"] == "1.094"
    assert lines["peak 1 s"] == "16 requests"
    assert lines["output tokens"].startswith("p50 129  p90 424  p99 601  max 1,000")
    assert lines["fingerprint"] == load_workload("azure-conv").fingerprint()


def test_describe_json_has_every_statistic(capsys: pytest.CaptureFixture[str]) -> None:
    d = json.loads(run(capsys, "describe", "noisy-neighbour", "--json"))
    assert set(d) >= {
        "requests",
        "span_s",
        "mean_rate_rps",
        "interarrival_cv",
        "peak_1s_requests",
        "input_tokens",
        "output_tokens",
        "tenants",
        "fingerprint",
        "notes",
        "seed",
    }
    assert set(d["output_tokens"]) == {"min", "mean", "p50", "p90", "p99", "max"}
    assert len(d["tenants"]) == 10


def test_every_flag_reaches_the_workload(capsys: pytest.CaptureFixture[str]) -> None:
    d = json.loads(
        run(
            capsys,
            "describe",
            "azure-conv",
            "--json",
            "--seed",
            "4",
            "--start",
            "60",
            "--duration",
            "600",
            "--time-scale",
            "2",
            "--rate",
            "12",
            "--rate-cv",
            "1",
            "--first",
            "5000",
            "--requests",
            "3000",
            "--max-context",
            "1024",
            "--jitter",
            "--jitter-width",
            "0.1",
        )
    )
    expected = load_workload(
        "azure-conv",
        seed=4,
        start_s=60,
        duration_s=600,
        time_scale=2,
        rate=12,
        rate_cv=1,
        first=5000,
        requests=3000,
        max_context=1024,
        jitter=True,
        jitter_width_s=0.1,
    )
    assert d["fingerprint"] == expected.fingerprint()
    assert d["requests"] == 3000 and d["seed"] == 4
    assert d["input_tokens"]["max"] + d["output_tokens"]["max"] <= 2048


def test_generic_trace_flags_and_closed_loop(
    capsys: pytest.CaptureFixture[str], write: Callable[[str, str], Path]
) -> None:
    path = write("t.csv", "ms,who,n,m\n0,a,5,6\n250,b,7,8\n500,a,9,10\n")
    d = json.loads(
        run(
            capsys,
            "describe",
            str(path),
            "--json",
            "--columns",
            "arrival=ms,input_tokens=n,output_tokens=m,tenant=who",
            "--time-unit",
            "ms",
            "--format",
            "csv",
            "--closed-loop-users",
            "2",
            "--think-time",
            "0.25",
        )
    )
    assert d["requests"] == 3 and d["tenants"]["a"]["requests"] == 2
    assert (d["closed_loop_users"], d["think_time_s"], d["mean_rate_rps"]) == (2, 0.25, None)


def test_list_names_every_preset_with_its_description(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "list")
    names = [line.split()[0] for line in out.splitlines()]
    assert {"azure-conv", "agentic", "multi-turn-chat", "reasoning-chat"} <= set(names)
    assert names == list_presets()  # every preset, each once
    assert all(len(line.split(None, 1)) == 2 for line in out.splitlines())
