"""pytest plugin: run a workload against an engine inside any test suite and assert gate rules.

Installed with batchmark (entry point `pytest11: batchmark`), so the `batchmark` fixture is available
to every project that has batchmark installed:

    def test_latency_budget(batchmark):
        run = batchmark.run("chat-small", engines=["continuous"], requests=16)
        batchmark.assert_rules(run, ["ttft.p99 <= 2s", "error_rate <= 1%"])

    def test_no_regression(batchmark):
        verdict = batchmark.compare("chat-small", baseline="continuous", candidate="continuous:max_running=8",
                                    rules=["tpot.p50 <= +5%"], requests=32)
        batchmark.assert_gate(verdict)

Engines are `batchmark run --engine` specs (static, continuous, zero, http:url=...). Run directories go
under pytest's tmp_path, or under --batchmark-out DIR to keep them. `--batchmark-executor ray` (and
`--batchmark-ray-address`, `--batchmark-workers`: the executor option table's flags) runs the trials on a
Ray cluster, connected once for the session. Heavy imports wait until a test
uses the fixture, so the plugin costs nothing to suites that never do. What it does set for every session
is OpenMP's passive wait policy (`OMP_WAIT_POLICY=PASSIVE`, unless the user chose one), before torch loads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.gate import Verdict


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Idle OpenMP workers wait passively in the pytest process itself, as under `batchmark` commands
    (docs/threads.md), unless the user chose a policy or GOMP_SPINCOUNT: libgomp reads the policy once, when
    torch loads it, so it is set here, before any conftest or test module can import torch. A test process that
    loaded torch first kept libgomp's spinning workers, and every engine step in it ran up to 20x slower on a
    busy 2-core machine (`pytest -n 2`: tests/engines/test_correctness.py's preemption run 87 s against 4 s).

    The rule of `engines.compute_threads.wait_passively`, not imported: the plugin loads nothing of `engines`
    before the suite's own conftests (a suite may hold a test package of that name, as this repository's
    tests/engines does)."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("batchmark", "batchmark workload runs and gate rules")
    group.addoption("--batchmark-out", metavar="DIR", default=None, help="keep run directories under DIR")
    group.addoption(
        "--batchmark-model",
        metavar="PATH",
        default=None,
        help="checkpoint for in-process engines (default: the embedded model)",
    )
    from harness.executor.options import EXECUTOR_OPTIONS

    for o in EXECUTOR_OPTIONS:
        group.addoption(
            "--batchmark-" + o.flag[2:],
            dest=f"batchmark_{o.name}",
            type=o.type,
            choices=o.choices or None,
            metavar=o.metavar,
            default=o.default,
            help=o.help,
        )


_EXECUTORS: dict[Any, Any] = {}  # one connection per session and choice; closed when pytest ends


def _executor(choice: Any) -> Any:
    if choice not in _EXECUTORS:
        from harness.executor import make_executor

        _EXECUTORS[choice] = make_executor(choice)
    return _EXECUTORS[choice]


def pytest_unconfigure(config: pytest.Config) -> None:
    while _EXECUTORS:
        _EXECUTORS.popitem()[1].close()


@dataclass
class Batchmark:
    """What the `batchmark` fixture hands a test: run workloads, gate runs, assert verdicts."""

    out_dir: Path
    model: str | None = None
    test_id: str = "test"
    executor: Any = None  # an ExecutorChoice (None: here, in this process)
    _count: int = field(default=0, repr=False)

    def run(
        self,
        workload: str = "chat-small",
        engines: Sequence[str] = ("continuous",),
        *,
        slo_ttft_ms: float | None = None,
        slo_tpot_ms: float | None = None,
        repeat: int = 1,
        seed: int = 0,
        **overrides: Any,
    ) -> Path:
        """Replay `workload` (preset, spec or trace, with load_workload overrides such as requests=, rate=)
        against the engines on the identical schedule; returns the run directory."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from engines import compute_threads

        # as `batchmark run` does: idle OpenMP workers sleep (unless the user chose a policy), at least in the
        # engine processes started from here if this process loaded torch already; spinning ones made every
        # step of a run here up to 10x slower on a busy 2-core machine
        compute_threads.wait_passively()
        from harness.engine_specs import load_for_engines, parse_engine_specs
        from harness.loadgen import Scenario
        from harness.metrics import SLO
        from harness.run import RunSettings, run_benchmark

        specs = parse_engine_specs(list(engines), {})
        loaded, _ = load_for_engines(workload, specs, self.model, seed=seed, **overrides)
        default = SLO()
        slo = SLO(
            ttft_s=default.ttft_s if slo_ttft_ms is None else slo_ttft_ms / 1e3,
            tpot_s=default.tpot_s if slo_tpot_ms is None else slo_tpot_ms / 1e3,
        )
        self._count += 1
        out = self.out_dir / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', self.test_id)[-80:]}-{self._count}"
        settings = RunSettings(
            out_dir=out,
            scenario=Scenario.suggested_by(loaded),
            repeat=repeat,
            seed=seed,
            slo=slo,
            model_path=self.model,
            report=False,
            workers=self.executor.workers if self.executor is not None else 1,
        )
        executor = _executor(self.executor) if self.executor is not None else None
        run_benchmark(loaded, specs, settings, ["pytest", self.test_id], executor=executor)
        return out

    def gate(
        self,
        rules: Sequence[str],
        candidate: Path,
        baseline: Path | None = None,
        *,
        engine: str | None = None,
        baseline_engine: str | None = None,
        candidate_engine: str | None = None,
        **settings: Any,
    ) -> Verdict:
        """Evaluate rules (grammar in docs/gate.md) on run directories; settings as in the rules file."""
        from harness.gate import GateConfig, evaluate, load_run, merged, rules_from_texts

        config = merged(GateConfig(rules=rules_from_texts(list(rules), where="batchmark.gate")), **settings)
        cand = load_run(Path(candidate), engine=candidate_engine or engine)
        base = load_run(Path(baseline), engine=baseline_engine or engine) if baseline is not None else None
        return evaluate(config, base, cand)

    def compare(
        self,
        workload: str,
        baseline: str,
        candidate: str,
        rules: Sequence[str],
        *,
        gate_settings: dict[str, Any] | None = None,
        **run_options: Any,
    ) -> Verdict:
        """Run two engine specs on the identical schedule in one run, then gate the candidate against the
        baseline. `run_options` go to `run` (requests=, rate=, slo_ttft_ms=...), `gate_settings` to the gate
        (alpha=, n_boot=, ...)."""
        run = self.run(workload, [_labelled(baseline, "baseline"), _labelled(candidate, "candidate")], **run_options)
        return self.gate(
            rules, run, run, baseline_engine="baseline", candidate_engine="candidate", **(gate_settings or {})
        )

    def assert_rules(self, run: Path, rules: Sequence[str], *, engine: str | None = None, **settings: Any) -> Verdict:
        """Absolute limits on one run (e.g. "ttft.p99 <= 2s"); fails the test with the Markdown summary."""
        verdict = self.gate(rules, run, engine=engine, **settings)
        self.assert_gate(verdict)
        return verdict

    @staticmethod
    def assert_gate(verdict: Verdict) -> None:
        from harness.gate import to_markdown

        if not verdict.passed:
            raise AssertionError("batchmark gate failed\n" + to_markdown(verdict))


def _labelled(spec: str, label: str) -> str:
    """Later keys win in an engine spec, so appending the label overrides any label the spec had."""
    return f"{spec}{',' if ':' in spec else ':'}label={label}"


@pytest.fixture
def batchmark(request: pytest.FixtureRequest, tmp_path: Path) -> Batchmark:
    """Run batchmark workloads against engines and assert gate rules (see harness.pytest_plugin)."""
    from harness.executor.options import ExecutorChoice

    keep = request.config.getoption("--batchmark-out")
    get = request.config.getoption
    choice = ExecutorChoice(get("batchmark_executor"), get("batchmark_ray_address"), get("batchmark_workers"))
    return Batchmark(
        out_dir=Path(keep) if keep else tmp_path,
        model=request.config.getoption("--batchmark-model"),
        test_id=request.node.nodeid,
        executor=None if choice == ExecutorChoice() else choice,
    )
