"""`batchmark run`: paired engines on the identical schedule, and a complete run directory."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.metrics import load_records

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def paired_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    # short chat (outputs 4..32 tokens, not chat-small's 8..128) at 16 req/s (not 2: the engines sat idle
    # through an 8 s span): what is checked is the shared schedule and the run directory, not the model's speed
    spec = out.parent / "short-chat.toml"
    spec.write_text(
        'seed = 0\nrequests = 16\n\n[[tenants]]\nname = "chat"\nrate = 16.0\narrival = { process = "poisson" }\n'
        'input = { dist = "normal", mean = 32, std = 4, min = 8 }\noutput = { dist = "uniform", low = 4, high = 32 }\n'
    )
    argv = [
        "run",
        "--workload",
        str(spec),
        "--requests",
        "16",
        "--engine",
        "static",
        "--engine",
        "continuous:max_running=8,label=cont8",
        "--out",
        str(out),
        "--no-report",
        "--no-progress",
    ]
    code = main(argv)
    assert code == 0
    return out


def test_engines_replay_the_identical_schedule(paired_run):
    records = load_records(paired_run / "records.jsonl")
    assert set(records["engine"]) == {"static", "cont8"}
    static = records[records["engine"] == "static"].set_index("request_id").sort_index()
    cont = records[records["engine"] == "cont8"].set_index("request_id").sort_index()
    assert list(static.index) == list(cont.index) and len(static) == 16
    assert (static["t_scheduled"] - cont["t_scheduled"]).abs().max() < 1e-9
    assert (static["prompt_tokens"] == cont["prompt_tokens"]).all()
    assert (static["output_tokens"] == static["max_tokens"]).all()  # ignore_eos honoured
    assert (cont["output_tokens"] == cont["engine_output_tokens"]).all()


def test_run_directory_is_complete(paired_run):
    for name in (
        "manifest.json",
        "requests.jsonl",
        "records.jsonl",
        "metrics.json",
        "steps/static-t0.jsonl",
        "steps/cont8-t0.jsonl",
    ):
        assert (paired_run / name).is_file(), name
    manifest = json.loads((paired_run / "manifest.json").read_text())
    for key in ("command", "git", "packages", "hardware", "model", "workload", "engines", "seed", "started_at"):
        assert manifest[key] is not None, key
    assert len(manifest["model"]["weight_sha256"]) == 64 and len(manifest["model"]["tokenizer_sha256"]) == 64
    assert len(manifest["workload"]["fingerprint"]) == 64
    assert [e["name"] for e in manifest["engines"]] == ["static", "cont8"]
    assert manifest["engines"][1]["options"]["continuous"]["max_running"] == 8
    assert manifest["hardware"]["torch_threads"] >= 1
    metrics = json.loads((paired_run / "metrics.json").read_text())
    assert set(metrics["engines"]) == {"static", "cont8"}
    assert metrics["comparison"]["baseline"] == "static"
    assert metrics["comparison"]["pairs"]["cont8"]["paired_requests"] == 16
    records = load_records(paired_run / "records.jsonl")
    steps = [json.loads(line) for line in (paired_run / "steps/cont8-t0.jsonl").read_text().splitlines()]
    assert steps[0]["t_start"] > -0.1 and steps[-1]["t_end"] <= records["t_finish"].max() + 0.5  # one clock
    summary = metrics["engines"]["cont8"]
    assert summary["requests"]["succeeded"] == 16
    assert summary["utilisation"]["steps"] > 0


def test_repeat_gives_confidence_intervals_across_trials(tmp_path, capsys):
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "30",
        "--time-scale",  # 30 requests in 0.15 s a trial: the trials' spread is what is checked, not their pace
        "100",
        "--engine",
        "zero",
        "--repeat",
        "3",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    code = main(argv)
    assert code == 0
    out = capsys.readouterr().out  # the duration estimate comes before the run (harness/estimate.py)
    assert out.index("estimate: 1 engine(s) x 3 trial(s)") < out.index("run directory") and "zero: instant" in out
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert len(metrics["runs"]) == 3
    ttft = metrics["repeat"]["zero"]["ttft_p99_s"]
    assert ttft["n"] == 3 and ttft["ci_low"] <= ttft["mean"] <= ttft["ci_high"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--engine", "warp"], "unknown engine 'warp'"),
        (["--engine", "continuous:max_running=lots"], "max_running='lots' is not an integer"),
        (["--engine", "continuous:colour=red"], "unknown option 'colour'"),
        (["--engine", "http"], "needs a url"),
        (["--repeat", "0", "--engine", "zero"], "--repeat 0"),
        (["--workload", "no-such-preset", "--engine", "zero"], "no-such-preset"),
    ],
)
def test_bad_flags_get_one_line(tmp_path, capsys, argv, needle):
    code = main(["run", "--out", str(tmp_path), "--no-report", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err


def test_offered_and_sent_rates_are_recorded_and_printed_side_by_side(tmp_path, capsys):
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "60",
        "--rate",
        "40",
        "--engine",
        "zero",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "offered 40.000 req/s" in out and "offered r/s" in out and "sent r/s" in out
    load = json.loads((tmp_path / "metrics.json").read_text())["engines"]["zero"]["load"]
    assert load["offered_rate_rps"] == pytest.approx(40.0, rel=1e-9)  # exactly what was asked
    assert load["send_rate_rps"] == pytest.approx(40.0, rel=0.05) and load["requests"] == 60


def test_a_closed_loop_pairs_engines_by_request(tmp_path, capsys):
    """In a closed loop each engine's users set their own pace, so a request's scheduled time differs
    between engines: the comparison pairs requests without demanding one schedule (it used to fail)."""
    argv = [
        "run",
        "--workload",
        "closed-loop-small",
        "--requests",
        "16",
        "--engine",
        "zero",
        "--engine",
        "zero:label=z2",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["comparison"]["pairs"]["z2"]["paired_requests"] == 16
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["settings"]["scenario"] == {"kind": "closed", "users": 8, "think_time_s": 0.5}


def test_the_scenario_is_a_run_setting(tmp_path):
    """`--scenario offline` offers a workload's requests all at once, whatever its arrival times."""
    argv = [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "12",
        "--engine",
        "zero",
        "--scenario",
        "offline",
        "--out",
        str(tmp_path),
        "--no-report",
        "--no-progress",
    ]
    assert main(argv) == 0
    records = load_records(tmp_path / "records.jsonl")
    assert records["t_scheduled"].max() == 0.0 and len(records) == 12
    schedule = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert max(r["arrival_s"] for r in schedule) > 1.0  # the workload's own arrivals were spread out
