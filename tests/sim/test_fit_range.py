"""A fitted profile records the range it was fitted on; a simulated run says how often and how far its steps fell
outside it (issue #30, item 3), says nothing when all were inside, and "range unknown" once for an old profile."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from engines.api import Request
from engines.sim.fit_range import RangeWatch
from engines.sim.fitted import REGRESSORS, TraceSteps, fit_steps, load_profile
from engines.step_features import StepFeatures
from harness.cli import main
from harness.loadgen import Scheduled
from harness.metrics.simulation import manifest_notices

FIDELITY_RUN = Path(__file__).parents[1] / "fixtures" / "sim_fidelity" / "chat-small"
ENGINE = {"kv_blocks": 512, "block_size": 16, "max_context": 4096, "kv_bytes_per_token": 1000}


def profile(tmp: Path, name: str, prompt: tuple[int, int], decode: int) -> Path:
    """A profile fitted on synthetic continuous steps: prompts of `prompt` tokens, up to `decode` decode rows."""
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(200):
        d, c = int(rng.integers(0, decode + 1)), int(rng.integers(0, 2))
        p = int(rng.integers(*prompt)) * c
        context = d * int(rng.integers(10, 40 * prompt[1]))
        rows.append(StepFeatures(p, c, d, 0, 0, context + p * p, 0, d + c, context, p * (p + 1) // 2))
    x = np.array(rows)
    durations = 1e-3 + x[:, 0] * 2e-5 + x[:, 1] * 1e-4 + x[:, 2] * 5e-5 + x[:, 8] * 1e-8 + x[:, 9] * 2e-8
    fitted = fit_steps(TraceSteps(x, durations, np.full(199, 1e-4), ["synthetic"]))
    fitted.engine = ENGINE
    path = tmp / f"{name}.json"
    fitted.save(path)
    return path


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("profiles")
    small, wide = profile(tmp, "small", (4, 16), 3), profile(tmp, "wide", (1, 2048), 64)
    old = tmp / "old.json"
    data = json.loads(small.read_text())
    del data["fit"]["ranges"]  # as written before the ranges were recorded
    old.write_text(json.dumps(data))
    return {"small": small, "wide": wide, "old": old}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory, profiles: dict[str, Path]) -> tuple[Path, str]:
    """One run (its fixed cost paid once: a summary per engine) of three engines: on a profile fitted on short
    prompts, on one fitted wide enough for every step, and on an old profile without ranges."""
    out = tmp_path_factory.mktemp("range") / "run"
    engines = [
        f"sim:profile={profiles['small']},noise=false,label=twin",
        f"sim:profile={profiles['wide']},noise=false,label=inside",
        f"sim:profile={profiles['old']},noise=false,label=a",
    ]
    argv = ["run", "--workload", "chat-small", "--requests", "8", "--no-report", "--no-progress", "--out", str(out)]
    capture = io.StringIO()
    with contextlib.redirect_stdout(capture):
        assert main(argv + [a for spec in engines for a in ("--engine", spec)]) == 0
    return out, capture.getvalue()


def range_check(out: Path, name: str) -> dict:
    engines = json.loads((out / "manifest.json").read_text())["engines"]
    return next(e for e in engines if e["name"] == name)["cost_model"]["range_check"]


def test_the_fit_records_its_range(profiles: dict[str, Path]) -> None:
    ranges = load_profile(profiles["small"]).fit["ranges"]
    assert set(ranges) == set(REGRESSORS)
    assert ranges["prefill_tokens"] == {"min": 4.0, "max": 15.0}  # prompts of 4-15 tokens, one chunk a step
    assert ranges["held_rows"] == {"min": 0.0, "max": 0.0}  # never seen


def test_steps_beyond_the_range_are_counted_by_how_far(profiles: dict[str, Path]) -> None:
    watch = RangeWatch(load_profile(profiles["small"]))
    fitted = load_profile(profiles["small"])
    for f in (StepFeatures(60, 1, 0, 0, 0, 100, 0, 1), StepFeatures(0, 0, 2, 0, 0, 40, 0, 2)):
        assert watch.step_time(f) == fitted.step_time(f)  # prices as the profile does
    check = watch.range_check()
    assert check["steps"] == 2 and set(check["outside"]) == {"prefill_tokens"}
    assert check["outside"]["prefill_tokens"] == {"steps": 1, "share": 0.5, "largest": 60, "ratio": 4.0}


def test_a_run_with_longer_prompts_warns_with_its_share(ran: tuple[Path, str]) -> None:
    out, printed = ran
    steps = [json.loads(line) for line in (out / "steps" / "twin-t0.jsonl").read_text().splitlines()]
    beyond = [s["prefill_tokens"] for s in steps if s["prefill_tokens"] > 15]  # counted apart from the simulator
    assert beyond, "chat-small's prompts are longer than 15 tokens"
    check = range_check(out, "twin")
    assert check["steps"] == len(steps)
    assert check["outside"]["prefill_tokens"]["share"] == pytest.approx(len(beyond) / len(steps))
    lines = [line for line in printed.splitlines() if line.startswith("RANGE: twin:")]
    assert len(lines) == 1, printed
    share = len(beyond) / len(steps)
    assert (
        f"prefill tokens per step up to {max(beyond)} vs fitted 4-15 ({max(beyond) / 15:.1f}x) in "
        f"{share:.0%} of steps ({len(beyond)} of {len(steps)})"
    ) in lines[0]
    assert lines[0].endswith(": extrapolated.")


def test_a_run_inside_the_range_says_nothing(ran: tuple[Path, str]) -> None:
    out, printed = ran
    check = range_check(out, "inside")
    assert check["steps"] > 0 and check["outside"] == {}
    assert "SIMULATED: inside" in printed
    assert not [line for line in printed.splitlines() if line.startswith("RANGE") and "inside" in line]


def test_an_old_profile_says_range_unknown_once(ran: tuple[Path, str], profiles: dict[str, Path]) -> None:
    out, printed = ran
    assert range_check(out, "a")["fitted"] is None
    assert printed.count("range unknown") == 1, printed
    assert "RANGE: a: range unknown" in printed
    # two engines on the old profile (twins, replicas): still one line, naming both
    watches = [RangeWatch(load_profile(profiles["old"])) for _ in range(2)]
    engines = []
    for name, watch in zip("ab", watches, strict=True):
        watch.step_time(StepFeatures(60, 1, 0, 0, 0, 100, 0, 1))
        engines.append({"name": name, "simulated": True, "cost_model": watch.describe()})
    unknown = [line for line in manifest_notices({"engines": engines}) if "range unknown" in line]
    assert len(unknown) == 1 and unknown[0].startswith("RANGE: a, b: range unknown"), unknown


def test_sim_fidelity_warns_per_engine(capsys: pytest.CaptureFixture[str], profiles: dict[str, Path]) -> None:
    argv = [
        "sim",
        "fidelity",
        str(FIDELITY_RUN),
        "--profile",
        str(profiles["small"]),
        "--no-noise",
        "--seeds",
        "1",
        "--engine",
        "continuous",
    ]
    assert main(argv) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "RANGE:" in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("warning: RANGE: sim-continuous: prefill tokens per step up to")
    assert warnings[0].endswith(": extrapolated.")


@pytest.mark.parametrize(
    "ranges", [{"prefill_tokens": {"min": 0}}, "wide", {name: {"min": 5, "max": 1} for name in REGRESSORS}]
)
def test_a_bad_range_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profiles: dict[str, Path], ranges: object
) -> None:
    data = json.loads(profiles["small"].read_text())
    data["fit"]["ranges"] = ranges
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    out = tmp_path / "run"
    assert main(["run", "--workload", "chat-small", "--out", str(out), "--engine", f"sim:profile={bad}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fit.ranges" in err and "Traceback" not in err, err
    assert not out.exists()


def test_a_cluster_counts_every_replicas_steps(profiles: dict[str, Path]) -> None:
    from tests.sim.test_cluster import cluster, run_open

    spec = f"cluster:replicas=2,router=round_robin,label=rr,replica=sim:profile={profiles['small']},noise=false"
    _, engine = cluster(spec)
    run_open(engine, [Scheduled(Request(f"r{i}", [7 + i] * 40, 3, ignore_eos=True), i * 0.5) for i in range(4)])
    check = engine.describe()["cost_model"]["range_check"]
    per_replica = [r.cost.range_check() for r in engine.replicas]
    assert all(c["outside"]["prefill_tokens"]["steps"] == 2 for c in per_replica)  # two 40-token prompts each
    assert check["steps"] == sum(c["steps"] for c in per_replica)
    assert check["outside"]["prefill_tokens"] == {
        "steps": 4,
        "share": 4 / check["steps"],
        "largest": 40,
        "ratio": 40 / 15,
    }
