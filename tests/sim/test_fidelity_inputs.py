"""`sim fidelity` on inputs that do not fit (issue #32): a run dir without its metrics is one line (exit 2, nothing
simulated), and a profile fitted on another KV layout, block size or model says so before its table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity"


@pytest.mark.parametrize("metrics", [None, "[1]", '{"engines": {}}', "{", b"\xff\xfe\x00", "a directory"])
def test_a_run_dir_without_usable_metrics_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metrics: str | bytes | None
) -> None:
    run = tmp_path / "burst"
    shutil.copytree(FIXTURE / "burst", run)
    (run / "metrics.json").unlink()
    if metrics == "a directory":
        (run / "metrics.json").mkdir()
    elif isinstance(metrics, bytes):  # a binary file was a UnicodeDecodeError traceback
        (run / "metrics.json").write_bytes(metrics)
    elif metrics is not None:
        (run / "metrics.json").write_text(metrics)
    out = tmp_path / "table.json"
    assert main(["sim", "fidelity", str(run), "--profile", str(FIXTURE / "profile.json"), "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "metrics" in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [("kv_bytes_per_token", 4096), ("block_size", 32), ("model", {"weight_hash": "another-model"})],
)
def test_a_profile_fitted_on_another_engine_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: object
) -> None:
    profile = json.loads((FIXTURE / "profile.json").read_text())
    profile["engine"][key] = value
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    argv = ["sim", "fidelity", str(FIXTURE / "burst"), "--profile", str(path), "--no-noise", "--engine", "static"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    field = "weights" if key == "model" else key
    assert f"warning: static: {field} " in err and "the profile was fitted on" in err, err


def test_the_profile_fitted_on_the_run_is_not_warned_of(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sim", "fidelity", str(FIXTURE / "burst"), "--profile", str(FIXTURE / "profile.json"), "--no-noise"]
    assert main([*argv, "--engine", "static"]) == 0
    err = capsys.readouterr().err
    assert "the profile was fitted on" not in err, err  # (the profile predates fitted ranges: "range unknown")
    assert "range unknown" in err
