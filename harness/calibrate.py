"""Gate calibration: how often the gate cries wolf, and how often it catches a real slowdown.

A/A pairs run the same engine twice on one schedule: every failing verdict is a false alarm. Slowdown
pairs give the candidate an injected per-step slowdown (`slowdown=0.1`: every engine step takes 10%
longer): every failing verdict is a detection. The two kinds alternate, so drift in the machine's
load lands on both alike, and within a pair the engines' order alternates across trials (ABBA), so
whichever runs second is not always the same side. Each pair gets its own workload seed, so the rates
describe the gate over schedules, not over one lucky schedule.

This module runs the pairs; the statistics they feed are `harness.gate.calibration`. A pair replays
through `InProcessReplay` (one side after the other, as `batchmark run` does) or `ConcurrentReplay` (both
sides at the same instant, each in its own worker process: own interpreter, own GIL, its own core when
there are two, so whatever else loads a shared machine lands on both sides alike).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import HarnessInputError
from harness.gate import GateConfig, evaluate, sample_from_records
from harness.gate.calibration import KINDS, CalibrationPlan, PairResult, noise, rule_rows, summary
from harness.loadgen import Scenario
from harness.metrics import load_records

CALIBRATION_SCHEMA_VERSION = 1
START_LEAD_S = 0.3  # both workers get the order, then start together this long after it was sent

LoadWorkload = Callable[[int], Any]  # seed -> Workload
RunOne = Callable[[Any, Sequence[Any], Path], None]  # workload, engine specs in run order, run directory


def pair_specs(spec: Any, slowdown: float) -> dict[str, tuple[Any, Any]]:
    """(baseline, candidate) engine specs for each kind of pair."""
    if not (spec.in_process or spec.simulated):
        raise HarnessInputError(
            f"calibrate: --engine {spec.kind}: the injected slowdown needs an in-process or simulated engine"
        )
    base = dataclasses.replace(spec, label="baseline")
    same = dataclasses.replace(spec, label="candidate")
    slow = dataclasses.replace(spec, label="candidate", options={**spec.options, "slowdown": slowdown})
    return {"aa": (base, same), "slowdown": (base, slow)}


def run_pair(
    kind: str,
    index: int,
    plan: CalibrationPlan,
    specs: tuple[Any, Any],
    config: GateConfig,
    load: LoadWorkload,
    run_one: RunOne,
    out: Path,
) -> PairResult:
    started = time.perf_counter()
    seed = plan.seed + index
    workload = load(seed)
    frames = []
    for trial in range(plan.trials):
        order = specs if (index + trial) % 2 == 0 else specs[::-1]
        run_dir = out / f"{kind}-{index:02d}" / f"t{trial}"
        if run_dir.exists():
            raise HarnessInputError(f"calibrate: {run_dir} exists; give a new --out")
        run_one(workload, list(order), run_dir)
        frames.append(load_records(run_dir / "records.jsonl").assign(trial=trial))
    records = pd.concat(frames, ignore_index=True)
    verdict = evaluate(
        config,
        sample_from_records(records, engine="baseline", source=f"{kind}-{index:02d}"),
        sample_from_records(records, engine="candidate", source=f"{kind}-{index:02d}"),
    )
    return PairResult(
        kind, index, seed, verdict.regressed, time.perf_counter() - started, os.getloadavg()[0], rule_rows(verdict)
    )


@dataclass(frozen=True)
class PairSource:
    """What a pair needs to replay anywhere (picklable: on a cluster it runs on another node): the workload
    and its overrides, the scenario, and the model in-process engines run on."""

    workload: str
    overrides: dict[str, Any]
    scenario: Scenario
    model_path: str | None = None
    dtype: str = "float32"
    threads: int | None = None


_REPLAYS: dict[tuple[Any, ...], InProcessReplay] = {}  # one per worker process: the model loads once


def pair_unit(
    kind: str,
    index: int,
    plan: CalibrationPlan,
    specs: tuple[Any, Any],
    config: GateConfig,
    source: PairSource,
    *,
    out_dir: Path,
) -> PairResult:
    """One calibration pair as an executor unit: both sides, every trial, interleaved ABBA on one node."""
    from workloads import load_workload

    key = (source.scenario, source.model_path, source.dtype, source.threads)
    if key not in _REPLAYS:
        if specs[0].in_process:  # torch's threads: what the unit asked the cluster for
            from engines import compute_threads

            compute_threads.configure(source.threads or 1)
        _REPLAYS[key] = InProcessReplay(source.scenario, source.model_path, source.dtype)

    def load(seed: int) -> Any:
        return load_workload(source.workload, **source.overrides, seed=seed)

    return run_pair(kind, index, plan, specs, config, load, _REPLAYS[key], out_dir)


def calibrate(
    plan: CalibrationPlan,
    spec: Any,
    config: GateConfig,
    load: LoadWorkload,
    run_one: RunOne | None,
    out: Path,
    log: Callable[[str], None] = print,
    executor: Any = None,
    source: PairSource | None = None,
) -> dict[str, Any]:
    """Every pair, A/A and slowdown alternating. Here (`executor` None or local): one after the other with
    `run_one`. On a cluster: each pair one unit from `source`, as many at once as the cluster has room for."""
    out.mkdir(parents=True, exist_ok=True)
    specs = pair_specs(spec, plan.slowdown)
    order = [(kind, index) for index in range(plan.pairs) for kind in KINDS]
    results: list[PairResult] = []

    def done(r: PairResult) -> None:
        results.append(r)
        results.sort(key=lambda x: (x.index, KINDS.index(x.kind)))
        shown = ", ".join(f"{x['rule']}: {_pct(x['change'])} p={_num(x['p_value'])} {x['status']}" for x in r.rules)
        where = f", on {r.node}" if r.node else ""
        log(f"  {r.kind:8} pair {r.index:2d}: {r.word}  {shown}  ({r.seconds:.0f} s, load {r.load_average:.1f}{where})")
        _write(out, plan, config, results)

    if executor is None or executor.kind == "local":
        assert run_one is not None
        for kind, index in order:
            done(run_pair(kind, index, plan, specs[kind], config, load, run_one, out))
        return _write(out, plan, config, results)
    from harness.executor import Unit
    from harness.executor.node import node_name

    assert source is not None
    cpus = float(source.threads or 1) if spec.in_process else 1.0
    units = [
        Unit(pair_unit, (kind, index, plan, specs[kind], config, source), out, cpus, None, f"{kind}-{index:02d}")
        for kind, index in order
    ]
    for result in executor.map(units):
        done(dataclasses.replace(result.value, node=node_name(result.node)))
    return _write(out, plan, config, results)


def _write(out: Path, plan: CalibrationPlan, config: GateConfig, results: list[PairResult]) -> dict[str, Any]:
    data = {
        "schema_version": CALIBRATION_SCHEMA_VERSION,
        "plan": dataclasses.asdict(plan),
        "rules": [r.text for r in config.rules],
        "alpha": config.alpha,
        "summary": summary(plan, results),
        "noise": noise(results, config.alpha, plan.trials),
        "pairs": [dataclasses.asdict(r) for r in results],
    }
    (out / "calibration.json").write_text(json.dumps(data, indent=2, default=_none) + "\n")
    return data


def _none(value: Any) -> None:
    return None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


class InProcessReplay:
    """Replays a workload against engines with the model loaded once, writing only records.jsonl: many
    short runs, so no per-run model load, manifest or metrics."""

    def __init__(self, scenario: Scenario, model_path: str | None = None, dtype: str = "float32") -> None:
        self.scenario = scenario
        self.model_path, self.dtype = model_path, dtype
        self._loaded: Any = None

    @property
    def loaded(self) -> Any:
        """The model, loaded on first use: a simulated engine needs none (and a cluster worker then never
        imports torch)."""
        if self._loaded is None:
            from engines import compute_threads
            from engines.model.loader import load_model

            compute_threads.configure()  # this thread runs the event loop; the engines' threads compute
            self._loaded = load_model(self.model_path, dtype=self.dtype)
        return self._loaded

    def __call__(self, workload: Any, specs: Sequence[Any], run_dir: Path) -> None:
        self.replay_to(workload, specs, run_dir / "records.jsonl")

    def replay_to(self, workload: Any, specs: Sequence[Any], records_path: Path) -> None:
        from harness.engine_specs import build_engine
        from harness.jsonl import JsonlWriter
        from harness.loadgen import DEFAULT_VOCAB_SIZE, build_schedule, dispatcher_first, replay_engine

        if all(spec.simulated for spec in specs):  # no engine reads a prompt's token ids
            loaded = None
            schedule = build_schedule(workload, DEFAULT_VOCAB_SIZE, (), 0, lengths_only=True)
        else:
            loaded = self.loaded
            schedule = build_schedule(workload, loaded.vocab_size, loaded.special_token_ids, 0)
        with dispatcher_first(), JsonlWriter(records_path) as records:
            for spec in specs:
                sink = lambda record: records.write(record.to_json())  # noqa: E731
                engine = build_engine(spec, loaded)
                asyncio.run(replay_engine(engine, schedule, self.scenario, sink, label=spec.label))


def _worker(conn: Any, scenario: Scenario, model_path: str | None, dtype: str, threads: int | None) -> None:
    try:
        from engines import compute_threads

        compute_threads.configure(threads)
        replay = InProcessReplay(scenario, model_path, dtype)
        replay.loaded  # noqa: B018 - loaded before "ready", so both sides of the first trial start together
        conn.send("ready")
        while (order := conn.recv()) is not None:
            workload, spec, path, start_at = order
            while time.time() < start_at:
                time.sleep(0.001)
            replay.replay_to(workload, [spec], Path(path))
            conn.send("ok")
    except Exception as exc:  # report to the parent instead of dying silently
        conn.send(f"error: {type(exc).__name__}: {exc}")


class ConcurrentReplay:
    """Both sides of a pair at once, one worker process each; call `close()` when done."""

    def __init__(
        self, scenario: Scenario, model_path: str | None = None, dtype: str = "float32", threads: int | None = 1
    ) -> None:
        ctx = mp.get_context("spawn")  # a fresh interpreter: no torch threads or locks inherited
        self._conns = []
        self._procs = []
        for _ in range(2):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, scenario, model_path, dtype, threads), daemon=True)
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            self._expect(conn, "ready")

    def __call__(self, workload: Any, specs: Sequence[Any], run_dir: Path) -> None:
        if len(specs) != 2:
            raise HarnessInputError(f"concurrent replay runs two engines at once, got {len(specs)}")
        run_dir.mkdir(parents=True, exist_ok=True)
        start_at = time.time() + START_LEAD_S
        parts = [run_dir / f"records-{spec.label}.jsonl" for spec in specs]
        for conn, spec, part in zip(self._conns, specs, parts, strict=True):
            conn.send((workload, spec, str(part), start_at))
        for conn in self._conns:
            self._expect(conn, "ok")
        with (run_dir / "records.jsonl").open("a", encoding="utf-8") as merged:
            for part in parts:
                merged.write(part.read_text(encoding="utf-8"))
                part.unlink()

    @staticmethod
    def _expect(conn: Any, word: str) -> None:
        answer = conn.recv()
        if answer != word:
            raise RuntimeError(f"calibration worker failed: {answer}")

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(BrokenPipeError, OSError):  # a worker that died has nothing to stop
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=10)
