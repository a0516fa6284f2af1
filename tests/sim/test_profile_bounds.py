"""Simulator profiles and model configs with values of the right type but no sense (issue #32): one line naming
the field, exit 2, and no run directory written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.sim.fitted import fit_steps
from engines.sim.shape import CONFIG_DIR
from harness.cli import main
from tests.sim.test_fitted import synthetic_steps


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, field: str) -> None:
    out = tmp_path / "run"
    argv = ["run", "--out", str(out), "--no-report", "--no-progress", "--workload", "chat-small", "--engine", spec]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert field in err, err
    assert not out.exists()  # nothing ran


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("intercept_s", -0.17),  # virtual time ran backwards: t_finish -170 s
        ("intercept_s", float("nan")),
        ("step_gap_s", float("inf")),
        ("coefficients.decode_seqs", -1e-3),
        ("coefficients.prefill_tokens", float("nan")),
        ("coefficients.prefill_tokens", True),
        ("intercept_s", 10**400),  # an exact JSON integer passed `< inf` and overflowed float() later
        ("intercept_s", "0.1"),
        ("coefficients.decode_seqs", float("inf")),
    ],
)
def test_a_senseless_profile_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float
) -> None:
    profile = fit_steps(synthetic_steps())
    profile.engine = {"kv_bytes_per_token": 8192, "kv_blocks": 100}
    data = profile.to_json()
    if field.startswith("coefficients."):
        data["coefficients"][field.split(".")[1]] = value
    else:
        data[field] = value
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))  # NaN and Infinity written as JSON's common extension, as Python reads it
    refused(tmp_path, capsys, f"sim:profile={path}", field)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\xff\xfe\x00\x01", "not UTF-8"),
        (b"", "not valid JSON"),
        (b'{"a":' * 100_000, "nested too deeply"),
        (None, "cannot read"),
    ],
)
@pytest.mark.parametrize("kind", ["profile", "model"])
def test_an_unreadable_profile_or_config_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, content: bytes | None, said: str
) -> None:
    path = tmp_path / "file.json"
    if content is None:
        path.mkdir()  # a directory where the file belongs (a model's: one without its config.json)
    else:
        path.write_bytes(content)
    refused(tmp_path, capsys, f"sim:{kind}={path}", said)


@pytest.mark.parametrize("value", ["131072", float("inf"), -1, True, 0, 1.5, 2**70])
def test_a_senseless_max_position_embeddings_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    config = json.loads((CONFIG_DIR / "llama-3.1-8b.json").read_text())
    config["max_position_embeddings"] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    refused(tmp_path, capsys, f"sim:model={path}", "max_position_embeddings")
