"""The roofline against public GPU step times (issue #30): the truth fixtures, `sim validate`, the calibration's
held-out errors, and the error band every simulated result prints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engines.sim.build import build_sim_engine
from engines.sim.calibration import CALIBRATED_HARDWARE, DEFAULT_CALIBRATION
from harness.cli import main
from harness.gpu_truth.band import VALIDATION_DIR, trust_text
from harness.gpu_truth.fit import FORMS, training_rows
from harness.gpu_truth.rows import DEFAULT_DIR, load_truth
from harness.gpu_truth.validate import validation_table


@pytest.fixture(scope="module")
def tables() -> dict[str, dict]:
    names = ("roofline", "public-a100", "public-a100-h200", "public-a100-h200-kernels")
    return {name: validation_table(name).to_json() for name in names}


def _group(table: dict, section: str, key: str) -> dict:
    return next(g for g in table["groups"] if g["section"] == section and g["key"] == key)


def test_the_split_is_half_the_rows_and_fixed_by_id() -> None:
    rows = load_truth()
    held = [r for r in rows if r.held_out]
    assert len(rows) == 550 and len(held) == 284  # pinned: a changed split rule would silently refit on other rows
    for name, hardware, mixed in (
        ("public-a100", ["a100"], False),
        ("public-a100-h200", ["a100", "h200"], False),
        ("public-a100-h200-kernels", ["a100", "h200"], True),
    ):
        train = training_rows(rows, hardware, mixed)
        assert len(train) == json.loads((VALIDATION_DIR.parent / f"{name}.json").read_text())["fitted_on"]["rows"]
    assert not [r for r in training_rows(rows, ["h200"]) if r.kind == "mixed"]  # the base form leaves them out
    mixed = [r for r in training_rows(rows, ["h200"], mixed=True) if r.kind == "mixed"]
    assert len(mixed) == 18 and not any(r.held_out for r in mixed)  # only their training half is ever fitted
    assert {r.source for r in rows} == {"splitwise", "vidur", "distserve", "batchmark-graph"}
    assert all(r.origin == "fit" for r in rows if r.source == "distserve")


def test_the_committed_validation_tables_are_what_validate_computes(tables: dict[str, dict]) -> None:
    # the band a run prints is read from these files: they must not drift from the fixtures and the model
    for name, table in tables.items():
        committed = json.loads((VALIDATION_DIR / f"{name}.json").read_text())
        assert committed == json.loads(json.dumps(table)), name


def test_the_calibration_holds_its_reached_errors_on_rows_it_never_saw(tables: dict[str, dict]) -> None:
    """Reached on held-out rows; the test fails if any grows. public-a100 is fitted on A100's training half only;
    public-a100-h200 on A100's and the H200 probe's (batchmark's own plain-torch stack, SOURCE.md). The issue's
    targets are 10% overall and 15% for decode, prefill and H100 (never fitted by either)."""
    plain = tables["roofline"]
    reached = {
        "public-a100": {
            ("accelerator", "a100"): 0.07,
            ("accelerator", "h100"): 0.15,
            ("accelerator / phase", "a100 decode"): 0.05,
            ("accelerator / phase", "h100 prefill"): 0.12,
        },
        "public-a100-h200": {
            ("total", "all rows"): 0.13,
            ("accelerator", "h100"): 0.16,
            ("accelerator", "h200"): 0.10,
            ("accelerator / phase", "h200 decode"): 0.06,
            ("accelerator / phase", "h200 prefill"): 0.10,
        },
        # the simulator's default on A100, H100 and H200: attention and activation kernels priced apart, fitted on
        # the training half of A100's and H200's rows, mixed steps included
        "public-a100-h200-kernels": {
            ("total", "all rows"): 0.093,
            ("phase", "decode"): 0.113,
            ("phase", "prefill"): 0.096,
            ("accelerator", "a100"): 0.056,
            ("accelerator", "h100"): 0.144,
            ("accelerator / phase", "h200 decode"): 0.048,
            ("accelerator / phase", "h200 prefill"): 0.061,
            ("accelerator / phase", "h200 mixed"): 0.058,
        },
    }
    for name, bounds in reached.items():
        cal = tables[name]
        for (section, key), bound in bounds.items():
            group = _group(cal, section, key)
            assert group["held_n"] >= 15, (name, section, key)
            assert group["held_median_abs"] <= bound + 0.005, (name, section, key, group["held_median_abs"])
            assert _group(plain, section, key)["held_median_abs"] > group["held_median_abs"] + 0.05, (section, key)
        assert _group(cal, "accelerator", "h100")["held_n"] == _group(cal, "accelerator", "h100")["n"]  # never fitted
    # mixed steps: never fitted by public-a100-h200 (17% off, worse than the plain roofline's 12%); their training
    # half fitted by the kernels form, which is checked on the other 18
    mixed = _group(tables["public-a100-h200"], "accelerator / phase", "h200 mixed")
    assert mixed["held_n"] == mixed["n"] >= 30 and mixed["held_median_abs"] <= 0.175, mixed
    mixed = _group(tables["public-a100-h200-kernels"], "accelerator / phase", "h200 mixed")
    assert mixed["held_n"] == 18 and mixed["n"] == 36, mixed
    # the A100 fit, priced without the H200 stack's floors, misses it by far more than the fit that saw that stack
    h200 = [_group(tables[n], "accelerator", "h200")["held_median_abs"] for n in ("public-a100", "public-a100-h200")]
    assert h200[0] > h200[1] + 0.2, h200


def test_validate_prints_every_regime(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "validate"]) == 0
    out = capsys.readouterr().out
    for regime in (
        "prefill short",
        "prefill mid",
        "prefill long",
        "decode batch 1",
        "decode batch 17-64",
        "decode ctx >4k",
        "tp 8",
        "all-reduce",
        "layer GEMMs",
        "<=10%",
    ):
        assert regime in out, regime


@pytest.mark.parametrize("damage", ["drop_column", "drop_regime", "bad_value"])
def test_a_bad_truth_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    truth = tmp_path / "truth"
    shutil.copytree(DEFAULT_DIR, truth, ignore=shutil.ignore_patterns("*.py", "__pycache__", "batchmark-*"))
    steps = (truth / "steps.csv").read_text().splitlines()
    if damage == "drop_column":
        kept = [",".join(line.split(",")[:-1]) for line in steps]  # no `ms`
    elif damage == "drop_regime":
        kept = [line for line in steps if not (",decode," in line and 2 <= int(line.split(",")[6]) <= 16)]
    else:
        kept = [steps[0], steps[1].rsplit(",", 1)[0] + ",fast", *steps[2:]]
    (truth / "steps.csv").write_text("\n".join(kept) + "\n")
    assert main(["sim", "validate", "--truth", str(truth)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert {
        "drop_column": "missing column 'ms'",
        "drop_regime": "'decode batch 2-16' has no rows",
        "bad_value": "steps.csv:2: field 'ms'",
    }[damage] in err, err


def test_an_unknown_calibration_or_stack_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "validate", "--cost", "no-such-calibration"]) == 2
    assert "unknown calibration" in capsys.readouterr().err
    with pytest.raises(Exception, match="has no stack 'trt'"):
        build_sim_engine({"hardware": "a100", "calibration": "public-a100", "stack": "trt"}, "x")


def test_a_roofline_engine_is_calibrated_by_default_where_a_calibration_exists() -> None:
    def used(spec: dict) -> dict:
        return build_sim_engine(spec, "x").describe()["simulated_with"]

    for hardware in CALIBRATED_HARDWARE:
        assert used({"hardware": hardware})["calibration"] == DEFAULT_CALIBRATION, hardware
    assert "calibration" not in used({"hardware": "h100", "calibration": "none"})  # the plain roofline, selectable
    assert "calibration" not in used({"hardware": "l40s"})  # no truth rows there: nothing fitted to apply
    assert used({"hardware": "a100", "calibration": "public-a100"})["calibration"] == "public-a100"
    with pytest.raises(Exception, match="calibration=none"):
        build_sim_engine({"hardware": "h100", "calibration": "none", "stack": "splitwise"}, "x")


def test_every_calibration_form_is_fitted_on_training_rows_only() -> None:
    """The forms docs/simulator.md names; a form's fit reads no held-out row (the split is by row id)."""
    assert list(FORMS) == ["base", "base+mixed", "attention", "attention+activation"]
    assert not [r for r in training_rows(load_truth(), ["a100", "h200"], mixed=True) if r.held_out]
    kernels = json.loads((VALIDATION_DIR.parent / f"{DEFAULT_CALIBRATION}.json").read_text())
    assert kernels["fitted_on"]["form"] == "attention+activation" and kernels["fitted_on"]["mixed_steps"] is True
    assert kernels["params"]["attention_mfu"] > 0 and kernels["stacks"]["splitwise"]["activation_bytes"] > 0


def test_a_simulated_engine_prints_the_tables_error_for_its_accelerator(tables: dict[str, dict]) -> None:
    plain = trust_text(build_sim_engine({"hardware": "h100", "calibration": "none"}, "x").describe())
    decode = _group(tables["roofline"], "accelerator / phase", "h100 decode")
    assert plain is not None and f"+/-{decode['held_median_abs']:.0%} median on {decode['held_n']} held-out" in plain
    calibrated = trust_text(build_sim_engine({"hardware": "a100", "calibration": "public-a100"}, "x").describe())
    decode = _group(tables["public-a100"], "accelerator / phase", "a100 decode")
    assert calibrated is not None and f"+/-{decode['held_median_abs']:.0%} median on {decode['held_n']}" in calibrated
    assert "unmeasured" in (trust_text(build_sim_engine({"hardware": "l40s"}, "x").describe()) or "")
    h200_spec = {"hardware": "h200", "calibration": "public-a100-h200", "stack": "batchmark-torch"}
    h200 = trust_text(build_sim_engine(h200_spec, "x").describe())
    decode = _group(tables["public-a100-h200"], "accelerator / phase", "h200 decode")
    assert h200 is not None and f"+/-{decode['held_median_abs']:.0%} median on {decode['held_n']}" in h200
    mixed = _group(tables["public-a100-h200"], "accelerator / phase", "h200 mixed")
    assert f"mixed steps within +/-{mixed['held_median_abs']:.0%} median on {mixed['held_n']}" in h200
    assert "stack" not in h200.split("median on")[-1]  # the rows' own stack: nothing to add
    other = trust_text(build_sim_engine({"hardware": "h200"}, "x").describe()) or ""  # the default, Splitwise's floors
    assert other.endswith("ran under the batchmark-torch stack; this engine prices stack splitwise's floors)")
    assert "mixed" not in (plain or "")  # no mixed steps measured on H100: nothing said
    assert "set by hand" in (trust_text(build_sim_engine({"hardware": "h100", "mbu": 0.5}, "x").describe()) or "")
    default = trust_text(build_sim_engine({"hardware": "h100"}, "x").describe())
    decode = _group(tables[DEFAULT_CALIBRATION], "accelerator / phase", "h100 decode")
    assert default is not None and f"calibration {DEFAULT_CALIBRATION} measured against h100" in default
    assert f"+/-{decode['held_median_abs']:.0%} median on {decode['held_n']}" in default
    overridden = build_sim_engine({"hardware": "a100", "calibration": "public-a100", "precision": "int8"}, "x")
    assert "set by hand" in (trust_text(overridden.describe()) or "")
