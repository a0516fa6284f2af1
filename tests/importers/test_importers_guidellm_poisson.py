"""GuideLLM 0.8.1's Poisson run against `batchmark serve` (fixtures/guidellm-0.8.1/README.md, `poisson/`): the
import, and the arrival check (`common.arrival_check`) that says when a schedule called Poisson is not one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.importers import read
from harness.importers.common import SAME_GAP_S, arrival_check
from harness.metrics import load_records
from workloads.build import load_workload

FIXTURE = Path(__file__).parent / "fixtures" / "guidellm-0.8.1" / "poisson" / "guidellm.json"
LABEL = "guidellm-poisson-20"
# the timings of one request that move with its scheduled start, so the request keeps its own durations
MOVED = (
    "targeted_start",
    "request_start",
    "first_token_iteration",
    "last_token_iteration",
    "request_end",
    "resolve_end",
)


def test_guidellm_poisson_run_imports_with_its_repeated_gaps(tmp_path: Path) -> None:
    """The real file: every request as an open loop at GuideLLM's own schedule, whose 255 gaps hold 26 values
    (its ten workers draw alike), so it offered 16.48 req/s for a nominal 20; the note and the numbers say so."""
    source = json.loads(FIXTURE.read_text())["benchmarks"][0]
    assert main(["import", str(FIXTURE), "--out", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["settings"]["scenario"]["kind"] == "open" and manifest["settings"]["open_loop"]
    records = load_records(run / "records.jsonl")
    assert len(records) == source["metrics"]["request_totals"]["total"] == 256 and records["error_type"].isna().all()
    requests = source["requests"]["successful"]
    ttft = (records["t_first_token"] - records["t_sent"]).to_numpy() * 1e3
    assert ttft == pytest.approx([r["time_to_first_token_ms"] for r in requests], abs=1e-6)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["engines"][LABEL]["load"]["offered_rate_rps"] == pytest.approx(16.48, abs=0.005)
    imported = metrics["imported"][LABEL]
    gaps = imported["settings"]["arrival_gaps"]
    assert (gaps["gaps"], gaps["distinct"]) == (255, 26) and gaps["repeated_share"] > 0.85
    (note,) = [n for n in imported["notes"] if n.startswith("arrivals:")]
    assert note.startswith("arrivals: 26 distinct gaps among 255, each repeated 9.8 times in a row on average")
    assert "GuideLLM 0.8.1 seeds one generator per worker process alike: 10 workers here" in note
    assert note.endswith("offered 16.48 req/s against the nominal 20")
    assert manifest["imported"]["runs"][LABEL]["notes"] == imported["notes"]


def test_guidellm_poisson_run_with_independent_gaps_gets_no_note(tmp_path: Path) -> None:
    """The same file with its schedule redrawn as independent exponential gaps (seeded), each request's other
    timings moved with its start: the check runs (numbers in the settings) but finds nothing to say."""
    data = json.loads(FIXTURE.read_text())
    requests = data["benchmarks"][0]["requests"]["successful"]
    requests.sort(key=lambda r: r["info"]["timings"]["targeted_start"])
    t0 = requests[0]["info"]["timings"]["targeted_start"]
    starts = t0 + np.concatenate([[0.0], np.cumsum(np.random.default_rng(7).exponential(1 / 20, len(requests) - 1))])
    for req, start in zip(requests, starts, strict=True):
        timings = req["info"]["timings"]
        shift = float(start) - timings["targeted_start"]
        for name in MOVED:
            timings[name] += shift
    path = tmp_path / "guidellm.json"
    path.write_text(json.dumps(data))
    run = read(path, "auto", None).runs[0]
    assert len(run.records) == 256 and not [n for n in run.notes if n.startswith("arrivals:")]
    gaps = run.settings["arrival_gaps"]
    # two of 255 independent draws at 20 req/s fall within a microsecond of each other about once a file (the
    # sorted gaps near zero lie some 0.2 ms apart), so "distinct" can read one or two short of 255
    assert gaps["gaps"] == 255 and gaps["distinct"] > 250 and gaps["repeated_share"] == 0.0


def test_a_constant_guidellm_run_is_not_checked(tmp_path: Path) -> None:
    """A constant rate repeats its gap by design: GuideLLM does not claim Poisson, so nothing is checked."""
    data = json.loads(FIXTURE.read_text())
    data["benchmarks"][0]["config"]["strategy"]["type_"] = "constant"
    path = tmp_path / "guidellm.json"
    path.write_text(json.dumps(data))
    run = read(path, "auto", None).runs[0]
    assert "arrival_gaps" not in run.settings and not [n for n in run.notes if n.startswith("arrivals:")]


def test_arrival_check_on_hand_made_schedules() -> None:
    why = "the tool's reason"
    # a constant gap claimed as Poisson: every gap repeats, one distinct value
    constant = arrival_check([0.1 * i for i in range(11)], "poisson", 10.0, why)
    assert constant is not None and (constant.gaps, constant.distinct, constant.repeated_share) == (10, 1, 1.0)
    assert constant.note is not None and "offered 10.00 req/s against the nominal 10" in constant.note
    # three draws, each repeated four times in a row (out of order, as records come): the note, with the run length
    gaps = np.repeat([0.05, 0.02, 0.11], 4)
    times = list(np.concatenate([[0.0], np.cumsum(gaps)])[::-1])
    repeated = arrival_check(times, "poisson", 20.0, why)
    assert repeated is not None and (repeated.gaps, repeated.distinct) == (12, 3)
    assert repeated.repeated_share == pytest.approx(9 / 11)
    assert repeated.note is not None and repeated.note.startswith(
        "arrivals: 3 distinct gaps among 12, each repeated 4.0 times in a row on average"
    )
    assert (
        f"({why})" in repeated.note and f"offered {12 / gaps.sum():.2f} req/s against the nominal 20" in repeated.note
    )
    # equal within a microsecond is equal (unix times near 1.8e9 s carry a few tenths of one in rounding)
    jitter = [1.8e9 + 0.05 * i + (0.4 * SAME_GAP_S if i % 2 else 0.0) for i in range(10)]
    assert (check := arrival_check(jitter, "poisson", 20.0, why)) is not None and check.distinct == 1
    assert check.note is not None
    # independent exponential gaps, and batchmark's own Poisson schedule: no note
    draws = np.concatenate([[0.0], np.cumsum(np.random.default_rng(0).exponential(1 / 20, 255))])
    independent = arrival_check(list(draws), "poisson", 20.0, why)
    assert independent is not None and independent.note is None and independent.distinct > 250
    own = [r.arrival_s for r in load_workload("docs/peers/agreement-poisson.toml").requests]
    assert (mine := arrival_check(own, "poisson", 20.0, why)) is not None and mine.note is None
    assert mine.repeated_share == 0.0
    # half the gaps repeating is not more than half: no note at the threshold
    half = np.concatenate([[0.0], np.cumsum([0.05, 0.05, 0.03, 0.07, 0.07])])  # 2 of 4 follow their equal
    assert (edge := arrival_check(list(half), "poisson", 20.0, why)) is not None and edge.repeated_share == 0.5
    assert edge.note is None
    # not claimed Poisson, or fewer than 3 requests (no two gaps to compare): not checked
    assert arrival_check([0.1 * i for i in range(11)], "constant", 10.0, why) is None
    assert arrival_check([0.0, 0.1], "poisson", 10.0, why) is None and arrival_check([], "poisson", 10.0, why) is None
