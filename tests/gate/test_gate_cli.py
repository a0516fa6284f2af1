"""`batchmark gate`: exit 0 pass, 1 regression, 2 invalid input; a JSON verdict and a Markdown summary."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.jsonl import JsonlWriter
from tests.fixtures.gate_runs import synthetic_run

RULES = """\
[gate]
alpha = 0.05
slo_ttft_ms = 150
slo_tpot_ms = 25
rules = [
  "ttft.p90 <= +10%",
  "tpot.p50 <= +5%",
  "goodput >= -5%",
  "error_rate <= 1%",
]
"""


def write_run(path, records, slo=None):
    path.mkdir()
    with JsonlWriter(path / "records.jsonl") as writer:
        for record in records:
            writer.write(record)
    manifest = {"workload": {"fingerprint": "f" * 64}, "settings": {"slo": slo or {"ttft_s": 2.0, "tpot_s": 0.2}}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


@pytest.fixture
def runs(tmp_path):
    made = {
        # 400 requests: enough for the A/A interval of ttft.p90 to lie inside +10% and, with no error,
        # for the exact bound of error_rate to lie under 1% (0 of 200 bounds it only by 1.5%)
        "base": write_run(tmp_path / "base", synthetic_run(1, n=400)),
        "same": write_run(tmp_path / "same", synthetic_run(2, n=400)),
        "slow": write_run(tmp_path / "slow", synthetic_run(3, n=400, speed=1.3)),
    }
    rules = tmp_path / "gate.toml"
    rules.write_text(RULES)
    made["rules"] = rules
    return made


def gate(runs, candidate, *extra):
    return main(
        [
            "gate",
            "--baseline",
            str(runs["base"]),
            "--candidate",
            str(runs[candidate]),
            "--rules",
            str(runs["rules"]),
            "--unit",  # one trial a side, and the synthetic requests are drawn independently
            "request",
            *extra,
        ]
    )


def test_pass_exits_0_and_writes_json_and_markdown(runs, tmp_path, capsys):
    code = gate(runs, "same", "--json", str(tmp_path / "v.json"), "--markdown", str(tmp_path / "v.md"))
    out = capsys.readouterr().out
    assert code == 0
    assert "gate: pass (4 rules)" in out and "| `tpot.p50 <= +5%` |" in out
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["verdict"] == "pass" and verdict["exit_code"] == 0 and verdict["pairing"]["paired"]
    assert [r["line"] for r in verdict["rules"]] == [6, 7, 8, 9]
    assert verdict["settings"]["slo"] == {"ttft_s": 0.15, "tpot_s": 0.025, "e2e_s": None}
    assert (tmp_path / "v.md").read_text().startswith("## batchmark gate: ✅ pass")


def test_regression_exits_1_and_names_the_failing_rules(runs, capsys):
    code = gate(runs, "slow", "--quiet")
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("gate: REGRESSION:") and "tpot.p50 <= +5% (fail: +29.9% [" in out
    assert out.count("\n") == 1


def test_json_to_stdout(runs, capsys):
    assert gate(runs, "slow", "--json", "-") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["verdict"] == "fail"
    assert "REGRESSION" in captured.err


def test_rules_on_the_command_line_and_absolute_limits_without_a_baseline(runs, capsys):
    code = main(["gate", "--candidate", str(runs["slow"]), "--rule", "ttft.p50 <= 10s", "--rule", "error_rate <= 1%"])
    assert code == 0
    assert "absolute limits only" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.replace('"goodput >= -5%"', '"goodput >= 5%%"'), ":8: field rules[2].threshold:"),
        (lambda t: t.replace("alpha = 0.05", "alpha = 1.5"), ":2: field gate.alpha:"),
        (lambda t: t.replace('"tpot.p50 <= +5%"', '"tpot.p50 =< +5%"'), ":7: field rules[1].operator:"),
        (lambda t: t + "x = [\n", ":11: field x: not valid TOML"),
    ],
)
def test_malformed_rules_file_exits_2_with_one_line(runs, capsys, edit, needle):
    runs["rules"].write_text(edit(RULES))
    assert gate(runs, "same") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"batchmark: error: {runs['rules']}") and needle in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--rule", "ttft.p99 <= +10%", "--baseline", "{tmp}/nowhere"], "not a run directory"),
        (["--rule", "ttft.p99 <= +10%", "--alpha", "0"], "--alpha"),
        (["--rule", "ttft.p99 <= +10%", "--engine", "ghost"], "no engine 'ghost'"),
        ([], "no rules"),
        (["--rule", "ttft.p99 <= +10%", "--pairing", "paired", "--baseline", "{tmp}/short"], "requests are in both"),
    ],
)
def test_invalid_input_exits_2(runs, tmp_path, capsys, argv, needle):
    write_run(tmp_path / "short", synthetic_run(1, n=5))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    base = [] if "--baseline" in argv else ["--baseline", str(runs["base"])]
    code = main(["gate", *base, "--candidate", str(runs["same"]), *argv])
    assert code == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_several_runs_per_side_become_trials(tmp_path):
    """Runs made one trial at a time, interleaved between the sides, are given as several RUNs per side."""
    base = [write_run(tmp_path / f"b{k}", synthetic_run(10 + k, n=60, schedule_seed=k)) for k in range(4)]
    slow = [write_run(tmp_path / f"c{k}", synthetic_run(20 + k, n=60, schedule_seed=k, speed=1.4)) for k in range(4)]
    out, md = tmp_path / "verdict.json", tmp_path / "verdict.md"
    code = main(
        [
            "gate",
            "--baseline",
            *map(str, base),
            "--candidate",
            *map(str, slow),
            "--rule",
            "tpot.p50 <= +5%",
            "--json",
            str(out),
            "--markdown",
            str(md),
            "--quiet",
        ]
    )
    verdict = json.loads(out.read_text())
    (rule,) = verdict["rules"]
    assert 0 < rule["trial_sd"] < 0.2 and f"one trial's change has sd {rule['trial_sd']:.1%}" in md.read_text()
    assert code == 1 and rule["status"] == "fail"
    assert verdict["settings"]["unit"] == "trial" and rule["n_baseline"] == rule["n_candidate"] == 4
    assert rule["test"].startswith("paired t-test on 4 trials") and verdict["pairing"]["paired"]
    same = main(
        ["gate", "--baseline", *map(str, base), "--candidate", *map(str, base), "--rule", "tpot.p50 <= +5%", "--quiet"]
    )
    assert same == 0
