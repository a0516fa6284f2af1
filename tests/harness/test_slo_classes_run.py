"""SLO classes end to end on the simulator: two classes (interactive 1 s TTFT, batch 30 s) at 1.1x capacity.

Capacity is the simulated engine's throughput on an offline burst of the same mix. Under fcfs the queue grows
and interactive requests wait behind batch ones; under the priority policy (the class's rank), SLO-aware
admission (each class's own target; batch deferred when it cannot make its own) and one slot reserved for the
most urgent class, interactive requests keep their target.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
import pytest

from engines.api import Request
from harness.engine_specs import build_engine, parse_engine_specs
from harness.errors import HarnessInputError
from harness.loadgen import Scheduled
from harness.loadgen.classes import apply_classes
from harness.loadgen.virtual import run_virtual_open_loop
from harness.metrics.frame import records_frame
from harness.metrics.slo_classes import describe_class, parse_slo_class, per_class
from harness.records import RequestRecord

CLASSES = (parse_slo_class("interactive:ttft_ms=1000"), parse_slo_class("batch:ttft_ms=30000"))
BASE = "sim:max_running=8,prefix_caching=false,admission_slo_ms=500"
DURATION_S = 60.0


def _requests(rng: np.random.Generator, n: int) -> list[Request]:
    out = []
    for i in range(n):
        interactive = rng.random() < 0.4  # short prompt and answer; batch: long both
        prompt = range(i << 40, (i << 40) + (256 if interactive else 2048))
        out.append(
            Request(
                f"r{i}",
                prompt,
                32 if interactive else 256,
                ignore_eos=True,
                tenant="interactive" if interactive else "batch",
            )
        )
    return out


def _run(extra: str, schedule: list[Scheduled]) -> list[RequestRecord]:
    records: list[RequestRecord] = []
    engine = build_engine(parse_engine_specs([BASE + extra], {})[0], None)
    run_virtual_open_loop(engine, schedule, records.append, label="sim")
    return records


@pytest.fixture(scope="module")
def by_policy() -> dict[str, dict[str, Any]]:
    burst = [Scheduled(r, 0.0) for r in _requests(np.random.default_rng(7), 300)]
    capacity = len(burst) / max(r.t_finish for r in _run("", burst) if r.t_finish is not None)
    rng = np.random.default_rng(1)
    rate = 1.1 * capacity
    arrivals = np.cumsum(rng.exponential(1 / rate, int(rate * DURATION_S)))
    plain = [Scheduled(r, float(t)) for r, t in zip(_requests(rng, arrivals.size), arrivals, strict=True)]
    schedule = apply_classes(plain, CLASSES, 0.25)
    out = {}
    for name, extra in {"fcfs": "", "classed": ",policy=priority,admission=defer,reserve_slots=1"}.items():
        out[name] = per_class(records_frame(_run(extra, schedule)), CLASSES, warmup_fraction=0.1)
    return out


def test_priority_and_admission_keep_the_interactive_class_and_fcfs_does_not(by_policy: dict[str, Any]) -> None:
    fcfs, classed = by_policy["fcfs"]["interactive"], by_policy["classed"]["interactive"]
    for name, rows in by_policy.items():
        for cls, row in rows.items():
            print(f"{name}: {describe_class(cls, row)}")
    assert fcfs["attainment"] < 0.95 and fcfs["binding"] == "ttft"
    assert classed["attainment"] >= 0.95
    low, high = classed["attainment_ci"]
    assert low <= classed["attainment"] <= high
    assert fcfs["requests"] == classed["requests"] > 50  # the same schedule, enough to judge by
    batch = by_policy["classed"]["batch"]
    assert batch["slo"]["ttft_s"] == 30.0 and batch["violations"]["failed"] == 0  # deferred, never shed
    g_low, g_high = batch["goodput_rps_steady_ci"]
    assert g_low <= batch["goodput_rps_steady"] <= g_high


def test_classes_set_rank_target_and_name_and_the_top_class_is_never_refused() -> None:
    schedule = [
        Scheduled(Request(f"r{i}", [1, 2], 4, tenant=t), 0.0) for i, t in enumerate(("batch", "interactive", "x"))
    ]
    batch, interactive, other = (s.request for s in apply_classes(schedule, CLASSES, 0.25))
    assert (interactive.priority, interactive.slo_class, interactive.admission_slo_s) == (0, "interactive", math.inf)
    assert (batch.priority, batch.slo_class, batch.admission_slo_s) == (1, "batch", 7.5)
    assert (other.priority, other.slo_class, other.admission_slo_s) == (2, None, None)
    missing = per_class(records_frame([]), CLASSES[:1], warmup_fraction=0.1)
    assert missing is not None and "n/a" in describe_class("interactive", missing["interactive"])


def test_bad_class_flags_are_one_line_before_any_work() -> None:
    from harness.cli.args import add_run_flags, check_run_flags

    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    for argv, message in (
        (["--slo-class", "a:ttft_ms=nan"], "positive finite"),
        (["--slo-class", "a:ttft_ms=1", "--slo-class", "a:e2e_ms=2"], "given twice"),
    ):
        with pytest.raises(HarnessInputError, match=message):
            check_run_flags(parser.parse_args(argv))
